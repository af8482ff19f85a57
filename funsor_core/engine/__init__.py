"""The engine: the interpreter (interpretation kinds, chains, dispatch, cons-hashing), the
declarative term protocol (fields, binds, arrays: substitution, pytrees, pickling), generic
term classes for typing, and the backend registry. It knows no term by name."""
