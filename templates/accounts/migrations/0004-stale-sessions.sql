-- vpnprov accounts database, migration 4: sessions of a node that stopped without saying so stop
-- counting. strongSwan sends accounting Start, Interim-Update and Stop but never Accounting-On/Off
-- (src/libcharon/plugins/eap_radius/eap_radius_accounting.c), so a node that crashed, lost power or
-- lost its path to the RADIUS servers left its sessions open in radacct, and they counted against
-- every affected account's device limit until someone closed them: those users were refused
-- ("Multiple logins"). A live session is updated every accounting interval (the node's
-- eap-radius accounting_interval; the stock Interim-Update query sets AcctUpdateTime), so a session
-- without an update for longer than the RADIUS servers' window (p_stale_after seconds: two intervals
-- and a minute, mods-enabled/sql) is a session of a node that is gone. docs/accounts.md, "Sessions
-- after a node crash".
--
-- Stale rows are left open, not closed: should the node come back (a network partition, not a crash),
-- its next Interim-Update matches the open row again and the session counts again.
--
-- A node that starts again closes its old sessions at once. strongSwan's Acct-Session-Id is
-- "<time charon started>-<IKE_SA number>" (eap_radius_accounting.c: the prefix is time(NULL) when the
-- plugin loads), and it is sent in every Access-Request (eap_radius_build_attributes, EAP and XAuth
-- alike) as well as in accounting. The first request of a node under a later start time than any
-- seen from it closes its open rows of earlier start times (acctterminatecause NAS-Reboot): those
-- tunnels died with the old charon.

-- Whether an open session of radacct counts as live: updated (or, without an update, started) within
-- p_stale_after seconds. NULL p_stale_after: every open session is live (what the 4-argument
-- functions below, asked by RADIUS servers rolled out before this migration, keep doing).
CREATE FUNCTION vpn_session_live(p_updated timestamptz, p_started timestamptz, p_stale_after integer)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    SELECT p_stale_after IS NULL
        OR coalesce(p_updated, p_started) > clock_timestamp() - make_interval(secs => p_stale_after)
$$;

-- The window as FreeRADIUS substitutes it (text); NULL unless it is a plain number of seconds.
CREATE FUNCTION vpn_stale_after(p_text text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_text ~ '^[0-9]{1,7}$' THEN p_text::integer END
$$;

-- The latest charon start time seen from each node (the prefix of its Acct-Session-Ids).
CREATE TABLE vpn_node_start (
    nasidentifier text PRIMARY KEY,
    started bigint NOT NULL
);
CREATE INDEX radacct_open_by_node ON radacct (nasidentifier) WHERE acctstoptime IS NULL;

-- Records the start time in p_session (an Acct-Session-Id) for node p_nas; when it is later than the
-- one known (or the first known), closes the node's open sessions of earlier starts. Returns how many
-- it closed. Anything but strongSwan's "<digits>-<digits>" is ignored.
CREATE FUNCTION vpn_node_started(p_nas text, p_session text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    started bigint;
    closed integer := 0;
BEGIN
    IF p_nas IS NULL OR p_nas = '' OR p_session IS NULL OR p_session !~ '^[0-9]{1,10}-[0-9]{1,10}$' THEN
        RETURN 0;
    END IF;
    started := split_part(p_session, '-', 1)::bigint;
    INSERT INTO vpn_node_start AS s (nasidentifier, started) VALUES (p_nas, started)
    ON CONFLICT (nasidentifier) DO UPDATE SET started = EXCLUDED.started WHERE s.started < EXCLUDED.started;
    IF FOUND THEN
        UPDATE radacct SET acctstoptime = clock_timestamp(), acctterminatecause = 'NAS-Reboot'
        WHERE nasidentifier = p_nas AND acctstoptime IS NULL
            AND acctsessionid ~ '^[0-9]{1,10}-[0-9]{1,10}$'
            AND split_part(acctsessionid, '-', 1)::bigint < started;
        GET DIAGNOSTICS closed = ROW_COUNT;
    END IF;
    RETURN closed;
END
$$;

-- A session's accounting Start also tells its node's start time (a node whose first word after a
-- restart is accounting).
CREATE FUNCTION vpn_session_started() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    PERFORM vpn_node_started(NEW.nasidentifier, NEW.acctsessionid);
    RETURN NULL;
END
$$;
CREATE TRIGGER radacct_tells_node_start AFTER INSERT ON radacct
    FOR EACH ROW WHEN (NEW.acctstoptime IS NULL) EXECUTE FUNCTION vpn_session_started();

-- The devices account p_user has in use: its live open sessions and its live claims (migration 3).
CREATE FUNCTION vpn_devices_in_use(p_user text, p_stale_after text) RETURNS TABLE (
    radacctid bigint, acctsessionid text, username text, nasipaddress inet, nasportid text,
    framedipaddress inet, callingstationid text, framedprotocol text
) LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT a.radacctid, a.acctsessionid, a.username, a.nasipaddress, a.nasportid, a.framedipaddress,
        a.callingstationid, a.framedprotocol
    FROM radacct AS a LEFT JOIN nasreload AS n USING (nasipaddress)
    WHERE lower(a.username COLLATE "C") = lower(p_user COLLATE "C") AND a.acctstoptime IS NULL
        AND (a.acctstarttime > n.reloadtime OR n.reloadtime IS NULL)
        AND vpn_session_live(a.acctupdatetime, a.acctstarttime, vpn_stale_after(p_stale_after))
    UNION ALL
    SELECT -c.id, 'claim-' || c.id, c.username, coalesce(c.nasipaddress, '0.0.0.0'::inet), NULL, NULL, NULL, NULL
    FROM vpn_device_claim AS c
    WHERE lower(c.username COLLATE "C") = lower(p_user COLLATE "C")
        AND c.claimed_at > clock_timestamp() - make_interval(secs => vpn_device_claim_seconds())
$$;

-- The device decision of one login (migration 3), counting only live sessions, after the login's
-- Acct-Session-Id (p_session) has told the node's start time.
CREATE FUNCTION vpn_device_claim(
    p_user text, p_limit text, p_nas text, p_nas_ip text, p_stale_after text, p_session text DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    in_use integer;
    lim integer;
BEGIN
    PERFORM vpn_node_started(p_nas, p_session);
    PERFORM pg_advisory_xact_lock(hashtextextended('vpn_device_claim:' || lower(p_user COLLATE "C"), 0));
    DELETE FROM vpn_device_claim
    WHERE lower(username COLLATE "C") = lower(p_user COLLATE "C")
        AND claimed_at <= clock_timestamp() - make_interval(secs => vpn_device_claim_seconds());
    SELECT count(*) INTO in_use FROM vpn_devices_in_use(p_user, p_stale_after);
    lim := CASE WHEN p_limit ~ '^[0-9]{1,6}$' THEN p_limit::integer END;
    IF lim IS NULL OR in_use < lim THEN
        INSERT INTO vpn_device_claim (username, nasidentifier, nasipaddress)
        VALUES (p_user, nullif(p_nas, ''),
            CASE WHEN p_nas_ip ~ '^[0-9a-fA-F.:]{2,45}$' THEN p_nas_ip::inet END);
    END IF;
    RETURN in_use;
END
$$;

-- The functions of migration 3 (RADIUS servers not yet rolled out ask them): every open session
-- counts, as before.
CREATE OR REPLACE FUNCTION vpn_devices_in_use(p_user text) RETURNS TABLE (
    radacctid bigint, acctsessionid text, username text, nasipaddress inet, nasportid text,
    framedipaddress inet, callingstationid text, framedprotocol text
) LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT * FROM vpn_devices_in_use(p_user, NULL)
$$;
CREATE OR REPLACE FUNCTION vpn_device_claim(p_user text, p_limit text, p_nas text, p_nas_ip text) RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT vpn_device_claim(p_user, p_limit, p_nas, p_nas_ip, NULL, NULL)
$$;

REVOKE EXECUTE ON FUNCTION vpn_devices_in_use(text, text), vpn_device_claim(text, text, text, text, text, text),
    vpn_node_started(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION vpn_devices_in_use(text, text), vpn_device_claim(text, text, text, text, text, text)
    TO radius;

INSERT INTO vpnprov_migrations (version, name) VALUES (4, 'stale-sessions');
