/* With dwarf_dup_a.c: 'struct dup' differs, 'struct same' does not. */
struct dup { long a; };
struct same { long x; char y; };
struct dup g_dup_b;
struct same g_same_b;
int b_main(void) { return (int)g_dup_b.a + (int)g_same_b.x; }
