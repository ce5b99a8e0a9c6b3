# attack: memory creep, 16 MiB at a time, every page touched
# category: memory
# expect: MLE
def double(x):
    keep = []
    while True:
        b = bytearray(16 << 20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        keep.append(b)
