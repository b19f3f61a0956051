-- vpnprov accounts database, migration 1: the tables FreeRADIUS 3.2's PostgreSQL queries use
-- (authorize, group, Simultaneous-Use, accounting, post-auth), the tiers, the tier decision and
-- the grants of the role `radius` that the RADIUS servers log in as. docs/accounts.md, "The database".
--
-- `vpnprov accounts migrate` runs this file in one transaction. A DBA may apply it by hand instead:
--   psql --single-transaction -v ON_ERROR_STOP=1 -f 0001-accounts.sql
-- It records itself in vpnprov_migrations (its last statement), either way.
--
-- The account contract (one account = these rows; the app backend may write them directly):
--   password   radcheck (username, 'NT-Password', ':=', 32 hex digits: MD4 of the UTF-16LE password)
--   devices    radcheck (username, 'Simultaneous-Use', ':=', '1'..'100')
--   tier       radusergroup (username, groupname = a vpn_tier.name, priority 1), one row per account
--   disabled   radcheck (username, 'Auth-Type', ':=', 'Reject'); delete the row to enable
-- Usernames: 1 to 64 of A-Z a-z 0-9 . _ @ + -

-- Which migrations this database has had.
CREATE TABLE vpnprov_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- Tiers, ranked: a node of tier T admits the accounts whose tier has a rank >= rank(T).
CREATE TABLE vpn_tier (
    name text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,31}$'),
    rank integer NOT NULL UNIQUE
);
INSERT INTO vpn_tier (name, rank) VALUES ('free', 0), ('pro', 10);

-- Per-user check items (authorize_check_query): the NT hash, the device limit, a disable mark.
CREATE TABLE radcheck (
    id serial PRIMARY KEY,
    username text NOT NULL CHECK (username ~ '^[A-Za-z0-9._@+-]{1,64}$'),
    attribute text NOT NULL,
    op varchar(2) NOT NULL DEFAULT ':=',
    value text NOT NULL DEFAULT ''
);
-- One row per attribute and account: the contract updates rows, it never stacks them.
CREATE UNIQUE INDEX radcheck_username_attribute ON radcheck (username, attribute);

-- Per-user reply items (authorize_reply_query); vpnprov writes none.
CREATE TABLE radreply (
    id serial PRIMARY KEY,
    username text NOT NULL CHECK (username ~ '^[A-Za-z0-9._@+-]{1,64}$'),
    attribute text NOT NULL,
    op varchar(2) NOT NULL DEFAULT '=',
    value text NOT NULL DEFAULT ''
);
CREATE INDEX radreply_username ON radreply (username, attribute);

-- Group check and reply items (authorize_group_check_query, authorize_group_reply_query),
-- looked up by the account's groups, which are its tier.
CREATE TABLE radgroupcheck (
    id serial PRIMARY KEY,
    groupname text NOT NULL,
    attribute text NOT NULL,
    op varchar(2) NOT NULL DEFAULT '==',
    value text NOT NULL DEFAULT ''
);
CREATE INDEX radgroupcheck_groupname ON radgroupcheck (groupname, attribute);

CREATE TABLE radgroupreply (
    id serial PRIMARY KEY,
    groupname text NOT NULL,
    attribute text NOT NULL,
    op varchar(2) NOT NULL DEFAULT '=',
    value text NOT NULL DEFAULT ''
);
CREATE INDEX radgroupreply_groupname ON radgroupreply (groupname, attribute);

-- The account's tier (group_membership_query). Exactly one row per account, naming a tier.
CREATE TABLE radusergroup (
    id serial PRIMARY KEY,
    username text NOT NULL UNIQUE CHECK (username ~ '^[A-Za-z0-9._@+-]{1,64}$'),
    groupname text NOT NULL REFERENCES vpn_tier (name) ON UPDATE CASCADE,
    priority integer NOT NULL DEFAULT 1
);

-- Sessions (accounting start, interim-update, stop; simul_count_query and simul_verify_query).
-- class and nasidentifier are filled through the sql module's class hook: the tier the session
-- was accepted with and the node (its nas_identifier) it runs on.
CREATE TABLE radacct (
    radacctid bigserial PRIMARY KEY,
    acctsessionid text NOT NULL,
    acctuniqueid text NOT NULL UNIQUE,
    username text,
    realm text,
    nasipaddress inet NOT NULL,
    nasportid text,
    nasporttype text,
    acctstarttime timestamptz,
    acctupdatetime timestamptz,
    acctstoptime timestamptz,
    acctinterval bigint,
    acctsessiontime bigint,
    acctauthentic text,
    connectinfo_start text,
    connectinfo_stop text,
    acctinputoctets bigint,
    acctoutputoctets bigint,
    calledstationid text,
    callingstationid text,
    acctterminatecause text,
    servicetype text,
    framedprotocol text,
    framedipaddress inet,
    framedipv6address inet,
    framedipv6prefix inet,
    framedinterfaceid text,
    delegatedipv6prefix inet,
    class text,
    nasidentifier text
);
-- Open sessions: of a user (Simultaneous-Use on every login, `accounts list`, disconnects) ...
CREATE INDEX radacct_open_by_user ON radacct (username) WHERE acctstoptime IS NULL;
-- ... by their unique id (interim-update and stop) ...
CREATE INDEX radacct_open_by_unique_id ON radacct (acctuniqueid) WHERE acctstoptime IS NULL;
-- ... and of a node (closing what a restarted node left open).
CREATE INDEX radacct_open_by_nas ON radacct (nasipaddress, acctstarttime) WHERE acctstoptime IS NULL;
CREATE INDEX radacct_start_user ON radacct (acctstarttime, username);

-- Authentication results (post-auth query). pass stays empty: the RADIUS policy removes
-- User-Password before this row is written.
CREATE TABLE radpostauth (
    id bigserial PRIMARY KEY,
    username text NOT NULL,
    pass text,
    reply text,
    calledstationid text,
    callingstationid text,
    authdate timestamptz NOT NULL DEFAULT now(),
    class text,
    nasidentifier text
);
CREATE INDEX radpostauth_username ON radpostauth (username);

-- Clients from SQL (client_query). vpnprov renders clients into the RADIUS configuration
-- instead, so this table stays empty; it exists because the stock configuration names it.
CREATE TABLE nas (
    id serial PRIMARY KEY,
    nasname text NOT NULL,
    shortname text NOT NULL,
    type text NOT NULL DEFAULT 'other',
    ports integer,
    secret text NOT NULL,
    server text,
    community text,
    description text
);
CREATE INDEX nas_nasname ON nas (nasname);

-- When a node last restarted (accounting-on; simul_count_query ignores sessions older than that).
CREATE TABLE nasreload (
    nasipaddress inet PRIMARY KEY,
    reloadtime timestamptz NOT NULL
);

-- The tier decision, in one place: the account's tier name when it may use a node of tier
-- p_node_tier, else '!' and the reason (FreeRADIUS logs it as the reject reason).
CREATE FUNCTION vpn_check(p_user text, p_node_tier text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN node.rank IS NULL THEN '!unknown node tier ' || coalesce(p_node_tier, '(none)')
        WHEN account.name IS NULL THEN '!account has no tier'
        WHEN account.rank < node.rank
            THEN '!tier ' || account.name || ' may not use a ' || p_node_tier || ' node'
        ELSE account.name
    END
    FROM (SELECT 1) AS one
    LEFT JOIN vpn_tier AS node ON node.name = p_node_tier
    LEFT JOIN LATERAL (
        SELECT t.name, t.rank FROM radusergroup AS g JOIN vpn_tier AS t ON t.name = g.groupname
        WHERE g.username = p_user ORDER BY t.rank DESC LIMIT 1
    ) AS account ON true
$$;

-- The role the RADIUS servers log in as: reads the accounts, writes sessions and
-- authentication results, nothing else. Created NOLOGIN when missing (creating a role needs
-- CREATEROLE); the DBA lets it log in: ALTER ROLE radius LOGIN PASSWORD '...'.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'radius') THEN
        CREATE ROLE radius NOLOGIN;
    END IF;
END
$$;
GRANT SELECT ON radcheck, radreply, radgroupcheck, radgroupreply, radusergroup, vpn_tier, nas, nasreload TO radius;
GRANT SELECT, INSERT, UPDATE ON radacct TO radius;
GRANT INSERT ON radpostauth TO radius;
GRANT USAGE ON SEQUENCE radacct_radacctid_seq, radpostauth_id_seq TO radius;
REVOKE EXECUTE ON FUNCTION vpn_check(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION vpn_check(text, text) TO radius;

INSERT INTO vpnprov_migrations (version, name) VALUES (1, 'accounts');
