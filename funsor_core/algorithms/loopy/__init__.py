"""Loopy graphs (Singh 2014): belief propagation and MCMC on discrete factor graphs.

``graph`` turns discrete Tensor factors into padded arrays; ``messages`` holds BP's array
math; ``bp`` its schedules and results; ``mcmc`` blocked Gibbs and Metropolis-Hastings;
``reference`` exact answers by elimination and the metrics that compare with them. The
public face is ``funsor_core.loopy``.
"""
