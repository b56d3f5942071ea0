"""Independent reviews (DESIGN §5): each reviewer's blind pass, their consensus and conflicts, and
the agreement between them. `world` lays a pass over the shared rows; `consensus` submits passes,
turns agreements into the run's decisions and disagreements into conflicts, and settles those;
`agreement` measures how far the passes agreed."""
