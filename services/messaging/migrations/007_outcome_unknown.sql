-- A pending message whose provider call started and never reported back: it may have been delivered, so
-- it is neither called sent nor failed; the reconciliation job notes it once (with the reason in
-- `error`) and leaves it for a provider status or an operator.
alter table messages add column outcome_unknown_since timestamptz;
