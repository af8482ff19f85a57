"""Contraction of products of factors: plans as data (``plan``), the pairwise semiring
kernels they run (``kernels``), the dense algebra the exact rules call (``dense``), the
linear-space runner with tracked scales (``linear_space``), the replay of recorded
eliminations (``replay``) and ``einsum`` with its opt_einsum backends (``semiring_einsum``)."""
