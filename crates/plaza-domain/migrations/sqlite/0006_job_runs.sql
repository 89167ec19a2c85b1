-- Claims of periodic background jobs, so that with several instances each
-- run of a cluster-wide job happens on one instance: a run is claimed by
-- setting `owner` and `locked_until` in one statement that succeeds only
-- when the job is due and nobody holds a live claim. A crashed owner's
-- claim expires at `locked_until`.
CREATE TABLE job_runs (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    locked_until BIGINT NOT NULL,
    next_run_at BIGINT NOT NULL,
    last_started_at BIGINT NOT NULL,
    last_finished_at BIGINT
);
