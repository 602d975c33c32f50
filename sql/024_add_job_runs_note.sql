-- What a run that succeeded wants known: e.g. an optional platform endpoint that is not served (404/501), whose
-- data the run skipped. Empty when there is nothing to say; a failed run's reason stays in `error`.
ALTER TABLE job_runs ADD COLUMN IF NOT EXISTS note String DEFAULT '' AFTER error;
