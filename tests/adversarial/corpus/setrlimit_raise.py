# attack: raise the CPU, memory, file-size and process rlimits back up, then loop
# category: time
# expect: TLE
import resource

for res in (resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC,
            resource.RLIMIT_NOFILE, resource.RLIMIT_CORE, resource.RLIMIT_DATA):
    for value in (resource.RLIM_INFINITY, 2**40):
        try:
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            pass


def double(x):
    while True:
        pass
