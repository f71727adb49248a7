"""AMD GPUs read from the amdgpu driver's sysfs files and /proc/PID/fdinfo, with no library;
and, in `smi/`, through ROCm's amd-smi tool where sysfs is out of reach."""
