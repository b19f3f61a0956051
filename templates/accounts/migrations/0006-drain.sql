-- vpnprov accounts database, migration 6: draining a node. A node taken out of service has a row here
-- (vpnprov accounts drain NODE --grace S; removed by vpnprov accounts undrain NODE). From the moment the row is
-- written the RADIUS servers refuse new logins on that node ("node draining", vpn_node_draining), the node's
-- sessions stop counting against device limits (so a client the node redirects to a sibling, IKEv2 redirect
-- RFC 5685, logs in there while its old session is still open), and the live catalogue says "draining". The
-- node's own work (redirecting its IKEv2 clients, ending the rest at grace_until) is deploy/drain.yml's.
-- docs/accounts.md, "Draining a node".

CREATE TABLE vpn_node_state (
    -- the node's name, its NAS-Identifier
    nasidentifier text PRIMARY KEY CHECK (nasidentifier ~ '^[A-Za-z0-9._-]{1,253}$'),
    state text NOT NULL DEFAULT 'draining' CHECK (state = 'draining'),
    since timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- when the node's remaining sessions are ended
    grace_until timestamptz NOT NULL,
    CHECK (grace_until >= since)
);

-- Whether node p_nas is draining: the RADIUS servers refuse a new login there.
CREATE FUNCTION vpn_node_draining(p_nas text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT EXISTS (SELECT 1 FROM vpn_node_state WHERE nasidentifier = p_nas AND state = 'draining')
$$;

-- The devices account p_user has in use (migration 4), without its sessions and claims on draining nodes: those
-- sessions are being moved to a sibling or ended at the end of the grace period. An account may so exceed its
-- limit during a drain by the sessions it had on the draining node, for the grace period at most.
CREATE OR REPLACE FUNCTION vpn_devices_in_use(p_user text, p_stale_after text) RETURNS TABLE (
    radacctid bigint, acctsessionid text, username text, nasipaddress inet, nasportid text,
    framedipaddress inet, callingstationid text, framedprotocol text
) LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT a.radacctid, a.acctsessionid, a.username, a.nasipaddress, a.nasportid, a.framedipaddress,
        a.callingstationid, a.framedprotocol
    FROM radacct AS a LEFT JOIN nasreload AS n USING (nasipaddress)
    WHERE lower(a.username COLLATE "C") = lower(p_user COLLATE "C") AND a.acctstoptime IS NULL
        AND (a.acctstarttime > n.reloadtime OR n.reloadtime IS NULL)
        AND vpn_session_live(a.acctupdatetime, a.acctstarttime, vpn_stale_after(p_stale_after))
        AND NOT EXISTS (SELECT 1 FROM vpn_node_state AS s WHERE s.nasidentifier = a.nasidentifier)
    UNION ALL
    SELECT -c.id, 'claim-' || c.id, c.username, coalesce(c.nasipaddress, '0.0.0.0'::inet), NULL, NULL, NULL, NULL
    FROM vpn_device_claim AS c
    WHERE lower(c.username COLLATE "C") = lower(p_user COLLATE "C")
        AND c.claimed_at > clock_timestamp() - make_interval(secs => vpn_device_claim_seconds())
        AND NOT EXISTS (SELECT 1 FROM vpn_node_state AS s WHERE s.nasidentifier = c.nasidentifier)
$$;

REVOKE EXECUTE ON FUNCTION vpn_node_draining(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION vpn_node_draining(text) TO radius;

INSERT INTO vpnprov_migrations (version, name) VALUES (6, 'drain');
