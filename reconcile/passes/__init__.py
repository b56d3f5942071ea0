"""Independent reviews (DESIGN §5): each reviewer's blind pass, their consensus and conflicts, and
the agreement between them. `world` lays a pass over the shared rows; `entering` marks the views
that read or decide in their caller's pass; `consensus` submits passes, turns agreements into the
run's decisions and disagreements into conflicts, and settles those; `agreement` measures how far
the passes agreed. The decision services know none of these: they read `reconcile.blind`."""
