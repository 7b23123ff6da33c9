"""placeholder"""

from ddp_viz.model.scenes.base import empty_frame


def build(record, cursor, progress, ctx):
    return empty_frame(ctx)
