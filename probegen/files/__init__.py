"""Files in and out: bounded input reading, atomic output, depfiles."""
