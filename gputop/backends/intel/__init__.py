"""Intel Arc and integrated GPUs read from the i915 and xe drivers' sysfs files and
/proc/PID/fdinfo, with no library."""
