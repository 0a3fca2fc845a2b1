/* A key-value store's probes, as memcached writes them. */
provider kv {
	/**
	 * Fired when a key is looked up.
	 * @param key the key (not NUL-terminated)
	 * @param keylen the length of the key
	 * @param casid the CAS id
	 */
	probe get(const char *key, int keylen, int64_t casid);
	/** Fired when the store starts. */
	probe start();
	probe never(int);
};
