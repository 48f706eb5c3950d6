-- A key in progress is held under a lease that its holder renews while the request runs: a lapsed lease
-- means the holder died, and the next request with the key takes it over. `holder` names the claim, so
-- that a holder whose key was taken over cannot renew, record or release the new holder's claim.
alter table idempotency_keys add column holder uuid, add column lease_until timestamptz;
-- Claims made before leases existed (also by gateways of the previous version during a rolling deploy,
-- which do not set the lease) keep the old two-minute grace.
update idempotency_keys set lease_until = updated_at + interval '2 minutes';
alter table idempotency_keys
  alter column lease_until set default now() + interval '2 minutes',
  alter column lease_until set not null;
