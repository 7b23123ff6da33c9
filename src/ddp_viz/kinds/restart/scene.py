PHASE_WORDS = ("save", "resume", "dies", "restart")


def build(record, cursor, progress, ctx):
    raise NotImplementedError
