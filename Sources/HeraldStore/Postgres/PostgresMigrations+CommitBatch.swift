extension PostgresMigrations {
    /// Version 21: a group-commit batch in one statement, one round trip (issue 40's targets). `herald_commit_batch`
    /// does in one call what ``PostgresStore/commit(_:)`` did in `BEGIN`, four statements and `COMMIT`: saves the
    /// outcomes, creates and locks the batch's quota counters (in one order on every instance), counts each device's
    /// pending notifications up to its bound, decides the accepts in order as ``BatchQuotaLedger`` does, releases the
    /// failed outcomes' quota, writes the counters back and inserts the accepted notifications. A single statement is
    /// atomic: nothing of the batch is written unless all of it is. In READ COMMITTED each statement inside the function
    /// takes a fresh snapshot, so the pending count, which runs after the lock, sees what a concurrent batch for the
    /// same device committed while this one waited there (the daily limit and the backlog bound stay exact).
    ///
    /// Quota bounds are passed with -1 for "none" (bounds are never negative: the store binds `max(bound, 0)`), so that
    /// the arrays hold no NULL and the loop reads them in constant time. `deadline` (seconds since 1970, or NULL): a
    /// statement that finishes after it raises 57014 and is rolled back, so that a batch its writer gave up while the
    /// statement was on its way (a frozen network) is not written later. The function's plans are cached per
    /// connection by PL/pgSQL, and the call itself is a named prepared statement. `plan_cache_mode =
    /// force_generic_plan`: PostgreSQL's default plans a statement with parameters again at every call for as long as
    /// its custom plans look cheaper than the generic one, and with arrays of a few elements they always did (the
    /// pending count and the counters' write were planned at each of 11,330 calls in herald-bench's scenario 7: 6.6 %
    /// of PostgreSQL's time, over issue 40's 5 %).
    static let commitBatch = Migration(
        version: 21, description: "a group-commit batch in one statement (herald_commit_batch)",
        statements: [
            """
            CREATE FUNCTION herald_commit_batch(
                o_id uuid[], o_status text[], o_attempts bigint[], o_last_error text[], o_provider_message_id text[],
                o_updated_at float8[], o_next_attempt_at float8[], o_expires_at float8[], o_parked boolean[],
                o_releases boolean[], o_owner text,
                a_day text[], a_counts_attempt boolean[], a_maximum bigint[], a_exempt_maximum bigint[],
                a_pending_maximum bigint[], a_is_pending boolean[],
                n_id uuid[], n_device_id uuid[], n_push_type text[], n_priority bigint[], n_collapse_id text[],
                n_payload bytea[], n_quota_day text[], n_status text[], n_attempts bigint[], n_last_error text[],
                n_provider_message_id text[], n_created_at float8[], n_updated_at float8[], n_next_attempt_at float8[],
                n_expires_at float8[], n_live_activity_token text[], n_content bytea[], n_rendered_by text[],
                n_lease_owner text[], n_lease_expires_at float8[], deadline float8)
            RETURNS TABLE (decision_index integer, decision_kind integer, decision_attempts bigint,
                decision_successful bigint, decision_errors bigint, decision_total bigint, decision_used_up boolean)
            LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
            #variable_conflict use_column
            DECLARE
                r_device uuid[]; r_day text[]; r_key integer[];
                k_device uuid[]; k_day text[]; k_attempts bigint[]; k_successful bigint[]; k_errors bigint[];
                k_total bigint[]; k_exempt bigint[]; k_announced boolean[]; k_absent boolean[]; k_changed boolean[];
                a_key integer[]; a_device integer[]; p_count bigint[];
                d_kind integer[] := '{}'; d_attempts bigint[] := '{}'; d_successful bigint[] := '{}';
                d_errors bigint[] := '{}'; d_total bigint[] := '{}'; d_used_up boolean[] := '{}';
                accepts integer := coalesce(array_length(n_id, 1), 0);
                x integer; k integer; dv integer; was boolean; used boolean; kind integer;
            BEGIN
                -- The outcomes whose notifications o_owner still holds (each releases its lease); the quota they give back.
                WITH saved AS (
                    UPDATE notification SET status = o.status, attempts = o.attempts, last_error = o.last_error,
                        provider_message_id = o.provider_message_id, updated_at = o.updated_at,
                        next_attempt_at = o.next_attempt_at, expires_at = o.expires_at, parked = o.parked,
                        lease_owner = NULL, lease_expires_at = NULL
                    FROM unnest(o_id, o_status, o_attempts, o_last_error, o_provider_message_id, o_updated_at,
                        o_next_attempt_at, o_expires_at, o_parked, o_releases) AS o (id, status, attempts, last_error,
                        provider_message_id, updated_at, next_attempt_at, expires_at, parked, releases)
                    WHERE notification.id = o.id AND notification.lease_owner = o_owner AND notification.status = 'pending'
                    RETURNING notification.device_id, notification.quota_day, o.releases)
                SELECT array_agg(s.device_id), array_agg(s.quota_day) INTO r_device, r_day
                FROM saved AS s WHERE s.releases AND s.quota_day IS NOT NULL;

                -- The counters: created if missing and locked, in one order on every instance; a counter created only
                -- to be released was not there (releasing it changes nothing).
                WITH wanted AS (
                    SELECT w.device_id, w.day, bool_or(w.counted) AS counted FROM (
                        SELECT a.device_id, a.day, true FROM unnest(n_device_id, a_day) AS a (device_id, day)
                        UNION ALL
                        SELECT r.device_id, r.day, false FROM unnest(r_device, r_day) AS r (device_id, day)
                    ) AS w (device_id, day, counted) GROUP BY w.device_id, w.day),
                locked AS (
                    INSERT INTO quota_counter (device_id, day) SELECT device_id, day FROM wanted ORDER BY device_id, day
                    ON CONFLICT (device_id, day) DO UPDATE SET attempts = quota_counter.attempts
                    RETURNING device_id, day, attempts, successful, errors, total, exempt, limit_announced, xmax = 0 AS created)
                SELECT array_agg(l.device_id ORDER BY l.device_id, l.day), array_agg(l.day ORDER BY l.device_id, l.day),
                    array_agg(l.attempts ORDER BY l.device_id, l.day), array_agg(l.successful ORDER BY l.device_id, l.day),
                    array_agg(l.errors ORDER BY l.device_id, l.day), array_agg(l.total ORDER BY l.device_id, l.day),
                    array_agg(l.exempt ORDER BY l.device_id, l.day), array_agg(l.limit_announced ORDER BY l.device_id, l.day),
                    array_agg(l.created AND NOT w.counted ORDER BY l.device_id, l.day), array_agg(false)
                INTO k_device, k_day, k_attempts, k_successful, k_errors, k_total, k_exempt, k_announced, k_absent, k_changed
                FROM locked AS l JOIN wanted AS w ON w.device_id = l.device_id AND w.day = l.day;

                IF accepts > 0 THEN
                    SELECT array_agg(ks.i::integer ORDER BY a.i) INTO a_key
                    FROM unnest(n_device_id, a_day) WITH ORDINALITY AS a (device_id, day, i)
                    JOIN unnest(k_device, k_day) WITH ORDINALITY AS ks (device_id, day, i)
                        ON ks.device_id = a.device_id AND ks.day = a.day;
                    -- Each device's pending notifications up to its largest bound, counted after the lock: concurrent
                    -- accepts for the device waited there, and now see each other's notifications.
                    WITH a AS (SELECT * FROM unnest(n_device_id, a_pending_maximum) WITH ORDINALITY AS a (device_id, bound, i)),
                    d AS (SELECT a.device_id, max(a.bound) AS bound, row_number() OVER (ORDER BY a.device_id) AS i
                        FROM a GROUP BY a.device_id)
                    SELECT (SELECT array_agg(d.i::integer ORDER BY a.i) FROM a JOIN d ON d.device_id = a.device_id),
                        (SELECT array_agg(CASE WHEN d.bound < 0 THEN 0 ELSE (SELECT count(*) FROM (SELECT 1 FROM notification
                            WHERE notification.device_id = d.device_id AND notification.status = 'pending' LIMIT d.bound) AS p)
                            END ORDER BY d.i) FROM d)
                    INTO a_device, p_count;
                END IF;

                -- The accepts, in order (BatchQuotaLedger.decide): the attempt first; then the backlog, the exempt
                -- cap, the daily maximum. Kinds: 0 accepted, 1 quota exceeded, 2 exempt quota exceeded, 3 backlog full.
                FOR x IN 1 .. accepts LOOP
                    k := a_key[x];
                    dv := a_device[x];
                    was := k_announced[k];
                    used := false;
                    k_changed[k] := true;
                    IF a_counts_attempt[x] THEN k_attempts[k] := k_attempts[k] + 1; END IF;
                    IF a_pending_maximum[x] >= 0 AND p_count[dv] >= a_pending_maximum[x] THEN
                        kind := 3;
                    ELSIF a_maximum[x] < 0 AND a_exempt_maximum[x] >= 0 AND k_exempt[k] >= a_exempt_maximum[x] THEN
                        kind := 2;
                    ELSIF a_maximum[x] >= 0 AND k_successful[k] >= a_maximum[x] THEN
                        kind := 1;
                    ELSE
                        kind := 0;
                        IF a_maximum[x] < 0 AND a_exempt_maximum[x] >= 0 THEN k_exempt[k] := k_exempt[k] + 1; END IF;
                        IF a_maximum[x] >= 0 THEN
                            k_successful[k] := k_successful[k] + 1;
                            k_total[k] := k_total[k] + 1;
                            k_announced[k] := k_announced[k] OR k_successful[k] >= a_maximum[x];
                            used := NOT was AND k_announced[k];
                        END IF;
                        IF a_is_pending[x] THEN p_count[dv] := p_count[dv] + 1; END IF;
                    END IF;
                    d_kind[x] := kind;
                    d_attempts[x] := k_attempts[k];
                    d_successful[x] := k_successful[k];
                    d_errors[x] := k_errors[k];
                    d_total[x] := k_total[k];
                    d_used_up[x] := used;
                END LOOP;

                -- The failed outcomes' quota moves from successful to errors.
                SELECT array_agg(ks.i::integer) INTO r_key
                FROM unnest(r_device, r_day) AS r (device_id, day)
                JOIN unnest(k_device, k_day) WITH ORDINALITY AS ks (device_id, day, i) ON ks.device_id = r.device_id AND ks.day = r.day;
                IF r_key IS NOT NULL THEN
                    FOREACH k IN ARRAY r_key LOOP
                        CONTINUE WHEN k_absent[k];
                        k_successful[k] := greatest(k_successful[k] - 1, 0);
                        k_errors[k] := k_errors[k] + 1;
                        k_changed[k] := true;
                    END LOOP;
                END IF;

                -- The counters back (locked: nobody changed them meanwhile), and the accepted notifications.
                UPDATE quota_counter SET attempts = c.attempts, successful = c.successful, errors = c.errors,
                    total = c.total, exempt = c.exempt, limit_announced = c.limit_announced
                FROM unnest(k_device, k_day, k_attempts, k_successful, k_errors, k_total, k_exempt, k_announced, k_changed)
                    AS c (device_id, day, attempts, successful, errors, total, exempt, limit_announced, changed)
                WHERE c.changed AND quota_counter.device_id = c.device_id AND quota_counter.day = c.day;
                IF 0 = ANY (d_kind) THEN
                    INSERT INTO notification (id, device_id, push_type, priority, collapse_id, payload, quota_day, status,
                        attempts, last_error, provider_message_id, created_at, updated_at, next_attempt_at, expires_at,
                        live_activity_token, content, rendered_by, lease_owner, lease_expires_at)
                    SELECT n.id, n.device_id, n.push_type, n.priority, n.collapse_id, n.payload, n.quota_day, n.status,
                        n.attempts, n.last_error, n.provider_message_id, n.created_at, n.updated_at, n.next_attempt_at,
                        n.expires_at, n.live_activity_token, n.content, n.rendered_by, n.lease_owner, n.lease_expires_at
                    FROM unnest(n_id, n_device_id, n_push_type, n_priority, n_collapse_id, n_payload, n_quota_day, n_status,
                        n_attempts, n_last_error, n_provider_message_id, n_created_at, n_updated_at, n_next_attempt_at,
                        n_expires_at, n_live_activity_token, n_content, n_rendered_by, n_lease_owner, n_lease_expires_at)
                        WITH ORDINALITY AS n (id, device_id, push_type, priority, collapse_id, payload, quota_day, status,
                        attempts, last_error, provider_message_id, created_at, updated_at, next_attempt_at, expires_at,
                        live_activity_token, content, rendered_by, lease_owner, lease_expires_at, i)
                    WHERE d_kind[n.i::integer] = 0;
                END IF;

                IF deadline IS NOT NULL AND extract(epoch FROM clock_timestamp())::float8 > deadline THEN
                    RAISE EXCEPTION 'the batch reached the database after its deadline: rolled back' USING ERRCODE = '57014';
                END IF;
                RETURN QUERY SELECT r.i::integer, r.kind, r.attempts, r.successful, r.errors, r.total, r.used_up
                    FROM unnest(d_kind, d_attempts, d_successful, d_errors, d_total, d_used_up) WITH ORDINALITY
                        AS r (kind, attempts, successful, errors, total, used_up, i)
                    ORDER BY r.i;
            END
            $$
            """
        ])
}
