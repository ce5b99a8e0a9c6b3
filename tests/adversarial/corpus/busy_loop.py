# attack: busy loop in the entry function
# category: time
# expect: TLE
def double(x):
    while True:
        pass
