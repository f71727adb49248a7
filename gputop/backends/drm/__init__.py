"""What every Linux DRM driver's GPU shares, whoever made it: the cards under /sys/class/drm,
their uevent and hwmon files, and the DRM usage stats of /proc/PID/fdinfo. The vendors' backends
(amd, intel) read their own files on top of these."""
