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

-- The device decision of one login (migration 3), counting only live sessions.
CREATE FUNCTION vpn_device_claim(p_user text, p_limit text, p_nas text, p_nas_ip text, p_stale_after text)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    in_use integer;
    lim integer;
BEGIN
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
    SELECT vpn_device_claim(p_user, p_limit, p_nas, p_nas_ip, NULL)
$$;

REVOKE EXECUTE ON FUNCTION vpn_devices_in_use(text, text), vpn_device_claim(text, text, text, text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION vpn_devices_in_use(text, text), vpn_device_claim(text, text, text, text, text)
    TO radius;

INSERT INTO vpnprov_migrations (version, name) VALUES (4, 'stale-sessions');
