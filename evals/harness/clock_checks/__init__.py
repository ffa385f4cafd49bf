"""The parent's clock: its checks that the candidate's reported times are real, and its figure.

Runs in the parent, apart from ``digest`` and ``query_flips``, which the workers run too (a
commitment each batch makes, and the fresh queries it makes inside a batch): the parent
recomputes both from outside before it believes them. ``wall_clock`` and ``wall_check`` time
back-to-back batches on the parent's clock, less the channel's round trip (``channel_cost``),
and ``wall_reading`` reads U off them and holds it to the reported figure;
``wall_verify`` checks that every call did its work; ``round_audit`` and ``timed_commit``
hold a timing round to what it reported; ``parent_figure`` makes the batches' time the figure
every CPU speedup uses; ``wall_settings`` holds their settings. On a GPU, ``gated_batch``
queues a batch behind the parent's gate, ``gated_setup`` prepares its cold copies and its
``null_batches`` (the same calls doing nothing, subtracted), and ``null_recheck`` judges a
passed check again once the candidate's process is gone.
"""
