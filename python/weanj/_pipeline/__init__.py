"""The execution layer: sessions that run variants, the gradient checks run, the case
table, and benchmark measurement. Everything that calls a user's code lives here."""
