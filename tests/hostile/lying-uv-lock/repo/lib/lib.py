def v():
    return 1
