"""Named dimensions on the axes of a device mesh: plated reductions and Markov products
computed as local blocks plus one collective (``kind``: the interpretation and its state;
``plates``: reductions over sharded plates; ``chains``: chains over sharded time)."""
