"""One run's calls of a user's code and what they share: the `Session` (every evaluation,
the Taylor test's losses, the forward-mode derivatives, the kink masks, each computed once
and kept), the lenders of a forward mode (`_donors`) and the rule that judges a pair as
the case table does (`_pair_rule`). Below the checks, the records, the executors and the
engine, each of which hands it on; above the evaluation."""
