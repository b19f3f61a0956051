-- vpnprov accounts database, migration 5: data quotas. Each tier may have a quota (bytes in and out
-- together per calendar month in UTC; NULL: unlimited), written by `vpnprov accounts migrate` from the
-- inventory's accounts.quotas, and each account an override (vpn_account_quota). docs/accounts.md,
-- "Data quotas".
--
-- Usage is counted in a ledger, per account and UTC day, from the accounting the nodes already send.
-- radacct cannot be summed per month: strongSwan keeps one Acct-Session-Id for the life of an IKE_SA,
-- IKE rekeys included (src/libcharon/plugins/eap_radius/eap_radius_accounting.c moves the session to the
-- rekeyed SA), so an always-on device has one row for weeks, and its octets are the session's totals.
-- Summing rows would put a whole session into the month it ends in (or starts in), and such an account's
-- month would never reset. Instead, every change of a row's octet counters adds the difference to the
-- ledger, dated by the accounting event that reported it (its Event-Timestamp, which the RADIUS policy
-- sets when the node sends none): the bytes of an interval that spans midnight, or the 1st of a month,
-- count on the day of the update that reported them. The error is at most one accounting interval's
-- bytes of a session, moved to the next day.

-- Each tier's quota; NULL: unlimited. `vpnprov accounts migrate` sets it from accounts.quotas.
ALTER TABLE vpn_tier ADD COLUMN data_quota bigint CHECK (data_quota > 0);

-- An account's own quota, instead of its tier's: a row with NULL is unlimited; no row, the tier's.
CREATE TABLE vpn_account_quota (
    username text PRIMARY KEY CHECK (username ~ '^[A-Za-z0-9._@+-]{1,64}$'),
    data_quota bigint CHECK (data_quota > 0)
);
CREATE UNIQUE INDEX vpn_account_quota_folded ON vpn_account_quota (lower(username COLLATE "C"));

-- The ledger: octets per account (its name folded as strongSwan compares identities, migration 2) and
-- UTC day. The column is COLLATE "C" so that the lookups below, which compare in "C", use the key.
CREATE TABLE vpn_usage_day (
    username text COLLATE "C" NOT NULL,
    day date NOT NULL,
    octets_in bigint NOT NULL DEFAULT 0,
    octets_out bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (username, day)
);

-- A session's counters only grow (strongSwan reports totals since the session began): an older record
-- that arrives after a newer one (replayed from a buffer) does not lower them, so its bytes are not
-- counted twice when the next record raises them again.
CREATE FUNCTION vpn_usage_monotonic() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.acctinputoctets := greatest(NEW.acctinputoctets, OLD.acctinputoctets);
    NEW.acctoutputoctets := greatest(NEW.acctoutputoctets, OLD.acctoutputoctets);
    RETURN NEW;
END
$$;
CREATE TRIGGER radacct_octets_only_grow BEFORE UPDATE OF acctinputoctets, acctoutputoctets ON radacct
    FOR EACH ROW EXECUTE FUNCTION vpn_usage_monotonic();

-- What a row's counters grew by goes to the ledger, on the UTC day of the event that reported it.
CREATE FUNCTION vpn_usage_counted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    d_in bigint;
    d_out bigint;
BEGIN
    IF NEW.username IS NULL THEN
        RETURN NULL;
    END IF;
    d_in := greatest(coalesce(NEW.acctinputoctets, 0) - CASE WHEN TG_OP = 'UPDATE' THEN coalesce(OLD.acctinputoctets, 0) ELSE 0 END, 0);
    d_out := greatest(coalesce(NEW.acctoutputoctets, 0) - CASE WHEN TG_OP = 'UPDATE' THEN coalesce(OLD.acctoutputoctets, 0) ELSE 0 END, 0);
    IF d_in = 0 AND d_out = 0 THEN
        RETURN NULL;
    END IF;
    INSERT INTO vpn_usage_day AS u (username, day, octets_in, octets_out)
    VALUES (lower(NEW.username COLLATE "C"),
        (coalesce(NEW.acctstoptime, NEW.acctupdatetime, NEW.acctstarttime, clock_timestamp()) AT TIME ZONE 'UTC')::date,
        d_in, d_out)
    ON CONFLICT (username, day) DO UPDATE
        SET octets_in = u.octets_in + EXCLUDED.octets_in, octets_out = u.octets_out + EXCLUDED.octets_out;
    RETURN NULL;
END
$$;
CREATE TRIGGER radacct_counts_usage AFTER INSERT OR UPDATE OF acctinputoctets, acctoutputoctets ON radacct
    FOR EACH ROW EXECUTE FUNCTION vpn_usage_counted();

-- The quota of account p_user: its own (vpn_account_quota) when it has a row, else its tier's; NULL:
-- unlimited.
CREATE FUNCTION vpn_data_quota(p_user text) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT CASE WHEN own.username IS NOT NULL THEN own.data_quota ELSE tier.data_quota END
    FROM (SELECT 1) AS one
    LEFT JOIN vpn_account_quota AS own ON lower(own.username COLLATE "C") = lower(p_user COLLATE "C")
    LEFT JOIN LATERAL (
        SELECT t.data_quota FROM radusergroup AS g JOIN vpn_tier AS t ON t.name = g.groupname
        WHERE lower(g.username COLLATE "C") = lower(p_user COLLATE "C") ORDER BY t.rank DESC LIMIT 1
    ) AS tier ON true
$$;

-- Account p_user's usage in the current period (the calendar month in UTC): the period's start and end,
-- the octets in (from the client) and out (to it), the quota (NULL: unlimited), what is left of it (NULL:
-- unlimited; 0 when used up) and whether it is used up. The database contract's answer for an app
-- backend. VOLATILE: the period is the one of each call's clock.
CREATE FUNCTION vpn_usage(p_user text) RETURNS TABLE (
    period_start timestamptz, period_end timestamptz, octets_in bigint, octets_out bigint,
    data_quota bigint, remaining bigint, over boolean
) LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    WITH period AS (
        SELECT date_trunc('month', clock_timestamp() AT TIME ZONE 'UTC') AS start
    ), used AS (
        SELECT coalesce(sum(u.octets_in), 0)::bigint AS octets_in, coalesce(sum(u.octets_out), 0)::bigint AS octets_out
        FROM period, vpn_usage_day AS u
        WHERE u.username = lower(p_user COLLATE "C") AND u.day >= period.start::date
    ), quota AS (
        SELECT vpn_data_quota(p_user) AS data_quota
    )
    SELECT period.start AT TIME ZONE 'UTC', (period.start + interval '1 month') AT TIME ZONE 'UTC',
        used.octets_in, used.octets_out, quota.data_quota,
        -- (greatest ignores NULL: an unlimited quota has no remaining)
        CASE WHEN quota.data_quota IS NOT NULL THEN greatest(quota.data_quota - used.octets_in - used.octets_out, 0) END,
        coalesce(used.octets_in + used.octets_out >= quota.data_quota, false)
    FROM period, used, quota
$$;

-- The seconds an account's Interim-Updates come at when little of its quota is left: long enough for
-- the remaining bytes at 12.5 MB/s (100 Mbit/s, one session's peak), at least 30 s (the least
-- accounting interval vpnprov writes).
CREATE FUNCTION vpn_quota_interval_floor() RETURNS integer LANGUAGE sql IMMUTABLE AS $$ SELECT 30 $$;
CREATE FUNCTION vpn_quota_rate() RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT 12500000::bigint $$;

-- The quota decision of a login (FreeRADIUS's policy, vpnprov_quota): '!' and the reason when account
-- p_user has used its quota; the seconds between its Interim-Updates when what is left would last less
-- than p_interval seconds (the nodes' accounting interval, as text) at vpn_quota_rate(); else ''.
CREATE FUNCTION vpn_quota_check(p_user text, p_interval text) RETURNS text
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT CASE
        WHEN u.data_quota IS NULL THEN ''
        WHEN u.over THEN '!data quota reached: used ' || (u.octets_in + u.octets_out) || ' of ' || u.data_quota
            || ' bytes until ' || to_char(u.period_end AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
        WHEN p_interval ~ '^[0-9]{1,7}$'
            AND u.remaining / vpn_quota_rate() < p_interval::integer
            THEN greatest(u.remaining / vpn_quota_rate(), vpn_quota_interval_floor())::text
        ELSE ''
    END
    FROM vpn_usage(p_user) AS u
$$;

-- Whether account p_user has used its quota ('yes' or 'no'): asked for every accounting Start and
-- Interim-Update, whose session FreeRADIUS then ends with a Disconnect-Request.
CREATE FUNCTION vpn_quota_exceeded(p_user text) RETURNS text
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT CASE WHEN over THEN 'yes' ELSE 'no' END FROM vpn_usage(p_user)
$$;

REVOKE EXECUTE ON FUNCTION vpn_data_quota(text), vpn_usage(text), vpn_quota_check(text, text),
    vpn_quota_exceeded(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION vpn_quota_check(text, text), vpn_quota_exceeded(text) TO radius;

INSERT INTO vpnprov_migrations (version, name) VALUES (5, 'quotas');
