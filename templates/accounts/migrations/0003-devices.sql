-- vpnprov accounts database, migration 3: a device limit that holds under parallel logins.
-- FreeRADIUS's Simultaneous-Use counted open radacct rows, which a node writes only after the login's
-- Access-Accept: logins that arrive together all saw the same count and were all accepted (a limit of
-- 2, one session and four parallel logins gave five tunnels). The RADIUS servers now ask
-- vpn_device_claim (their simul_count_query, mods-enabled/sql), which decides one login of an account
-- at a time (an advisory lock on the account's folded name) and, when it admits one, records a claim
-- that counts as a device until the session's accounting Start arrives (a trigger on radacct consumes
-- it) or, for a login the node gave up after the Accept, for vpn_device_claim_seconds() (10 s).
-- docs/accounts.md, "The device limit".

-- Logins admitted whose accounting Start has not arrived yet.
CREATE TABLE vpn_device_claim (
    id bigserial PRIMARY KEY,
    username text NOT NULL,
    nasidentifier text,
    nasipaddress inet,
    claimed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX vpn_device_claim_user ON vpn_device_claim (lower(username COLLATE "C"), claimed_at);
-- The open sessions of an account, by its folded name (names differ from strongSwan's view in case only).
CREATE INDEX radacct_open_by_folded_user ON radacct (lower(username COLLATE "C")) WHERE acctstoptime IS NULL;

-- How long an unconsumed claim counts: a node sends the accounting Start within a second of the
-- Accept; a login that fails after its Accept holds a device this long.
CREATE FUNCTION vpn_device_claim_seconds() RETURNS integer LANGUAGE sql IMMUTABLE AS $$ SELECT 10 $$;

-- The devices account p_user has in use: its open sessions (as FreeRADIUS's stock simul_count_query
-- counts them: not those a node's restart ended, nasreload) and its live claims.
-- VOLATILE: the claims are live as of each call (clock_timestamp).
CREATE FUNCTION vpn_devices_in_use(p_user text) RETURNS TABLE (
    radacctid bigint, acctsessionid text, username text, nasipaddress inet, nasportid text,
    framedipaddress inet, callingstationid text, framedprotocol text
) LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT a.radacctid, a.acctsessionid, a.username, a.nasipaddress, a.nasportid, a.framedipaddress,
        a.callingstationid, a.framedprotocol
    FROM radacct AS a LEFT JOIN nasreload AS n USING (nasipaddress)
    WHERE lower(a.username COLLATE "C") = lower(p_user COLLATE "C") AND a.acctstoptime IS NULL
        AND (a.acctstarttime > n.reloadtime OR n.reloadtime IS NULL)
    UNION ALL
    SELECT -c.id, 'claim-' || c.id, c.username, coalesce(c.nasipaddress, '0.0.0.0'::inet), NULL, NULL, NULL, NULL
    FROM vpn_device_claim AS c
    WHERE lower(c.username COLLATE "C") = lower(p_user COLLATE "C")
        AND c.claimed_at > clock_timestamp() - make_interval(secs => vpn_device_claim_seconds())
$$;

-- The device decision of one login, atomic per account: returns how many devices p_user has in use
-- (FreeRADIUS refuses the login when that is not below the limit) and, when it is below p_limit (the
-- account's Simultaneous-Use), records the login's claim in the same transaction. Logins of one account
-- wait for each other here, so each sees the claims of those decided before it.
CREATE FUNCTION vpn_device_claim(p_user text, p_limit text, p_nas text, p_nas_ip text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    in_use integer;
    lim integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('vpn_device_claim:' || lower(p_user COLLATE "C"), 0));
    DELETE FROM vpn_device_claim
    WHERE lower(username COLLATE "C") = lower(p_user COLLATE "C")
        AND claimed_at <= clock_timestamp() - make_interval(secs => vpn_device_claim_seconds());
    SELECT count(*) INTO in_use FROM vpn_devices_in_use(p_user);
    lim := CASE WHEN p_limit ~ '^[0-9]{1,6}$' THEN p_limit::integer END;
    IF lim IS NULL OR in_use < lim THEN
        INSERT INTO vpn_device_claim (username, nasidentifier, nasipaddress)
        VALUES (p_user, nullif(p_nas, ''),
            CASE WHEN p_nas_ip ~ '^[0-9a-fA-F.:]{2,45}$' THEN p_nas_ip::inet END);
    END IF;
    RETURN in_use;
END
$$;

-- A session's accounting row consumes the oldest live claim of its account on its node.
CREATE FUNCTION vpn_device_started() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    DELETE FROM vpn_device_claim WHERE id = (
        SELECT id FROM vpn_device_claim
        WHERE lower(username COLLATE "C") = lower(NEW.username COLLATE "C")
            AND nasidentifier IS NOT DISTINCT FROM NEW.nasidentifier
        ORDER BY claimed_at LIMIT 1
        FOR UPDATE SKIP LOCKED);
    RETURN NULL;
END
$$;
CREATE TRIGGER radacct_consumes_device_claim AFTER INSERT ON radacct
    FOR EACH ROW WHEN (NEW.acctstoptime IS NULL) EXECUTE FUNCTION vpn_device_started();

REVOKE EXECUTE ON FUNCTION vpn_devices_in_use(text), vpn_device_claim(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION vpn_devices_in_use(text), vpn_device_claim(text, text, text, text) TO radius;

INSERT INTO vpnprov_migrations (version, name) VALUES (3, 'devices');
