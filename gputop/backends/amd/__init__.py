"""AMD GPUs read from the amdgpu driver's sysfs files and /proc/PID/fdinfo, with no library."""
