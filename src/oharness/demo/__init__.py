"""``oharness demo``: the Memory page on a sample project in a temporary home (spec 11).

:mod:`.content` holds the sample notes, :mod:`.home` the temporary folder, :mod:`.seed` fills
two simulated devices, :mod:`.cloud` is the demo's own sync server in a child process,
:mod:`.status` what the demo says while it runs, and :mod:`.run` puts them together.
"""
