/* The scheduler structs as the C headers have them now, compiled with -g
 * by probegen's lint tests so `probegen lint --binary` has DWARF to check
 * scripts against. Written for those tests. */
#include <stdbool.h>
#include <stdint.h>

struct spdk_thread_stats {
    uint64_t busy_tsc;
    uint64_t idle_tsc;
};

struct spdk_scheduler_thread_info {
    uint32_t lcore;
    uint64_t thread_id;
    struct spdk_thread_stats current_stats;
    struct spdk_thread_stats total_stats;
};

struct spdk_scheduler_core_info {
    uint64_t total_idle_tsc;
    uint64_t total_busy_tsc;
    uint64_t current_idle_tsc;
    uint64_t current_busy_tsc;
    uint32_t lcore;
    uint32_t threads_count;
    bool interrupt_mode;
    struct spdk_scheduler_thread_info *thread_infos;
};

struct spdk_scheduler_core_info g_cores[4];

int main(void)
{
    return (int)g_cores[0].threads_count;
}
