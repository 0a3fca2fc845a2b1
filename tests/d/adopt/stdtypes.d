/*
 * A provider file using the types real .d files use: standard C and POSIX
 * typedefs (gobject_probes.d's uintmax_t, ...), a #define and a typedef as
 * PostgreSQL's probes.d has them, a conditional for dtrace -C, and the
 * comment lines SystemTap's dtrace skips.
 */
#define Oid unsigned int
typedef unsigned long long hrtime_t;

provider stdt {
	/**
	 * Fired when a key is stored.
	 * @param key the key (not NUL-terminated)
	 * @param nkey its length
	 */
	probe store(const char *key, uint8_t nkey, size_t bytes);
	probe widths(uintmax_t, intmax_t, time_t, ssize_t, off_t, pid_t, u_int32_t, Oid);
	probe posix(uid_t u, gid_t g, u_int8_t b, u_int16_t w, u_int64_t q, clock_t c, mode_t m, hrtime_t t);
	probe fixed(int_least16_t l, uint_fast32_t f, socklen_t s, intptr_t p, ptrdiff_t d, unsigned u);
	probe none();
};
