-- vpnprov accounts database, migration 2: an account name is unique as strongSwan compares IKE and
-- EAP identities, that is without regard to case (libstrongswan/utils/identification.c compares
-- FQDN and e-mail identities with strncasecmp; an EAP identity "bob" is an FQDN identity). "bob" and
-- "BOB" were two accounts, yet one node took them for one peer: BOB's login ended bob's tunnel, and a
-- Disconnect-Request for bob ended BOB's. docs/accounts.md, "An account, row by row".
--
-- Names are compared in ASCII (COLLATE "C": lower() folds A-Z only, as strncasecmp does in the C
-- locale, whatever the database's locale); the names are ASCII by the CHECK constraints of migration 1.
-- A database that already holds two names that differ only in case is refused with both names: rename
-- or delete one of them, then migrate again.
DO $$
DECLARE
    clash text;
BEGIN
    SELECT string_agg(names, '; ') INTO clash FROM (
        SELECT string_agg(DISTINCT username, ', ' ORDER BY username) AS names
        FROM (SELECT username FROM radcheck UNION SELECT username FROM radusergroup) AS accounts
        GROUP BY lower(username COLLATE "C") HAVING count(DISTINCT username) > 1
    ) AS clashes;
    IF clash IS NOT NULL THEN
        RAISE EXCEPTION 'account names that differ only in case (strongSwan takes them for one identity): %', clash;
    END IF;
END
$$;

-- One tier row per account: at most one account per case-folded name.
CREATE UNIQUE INDEX radusergroup_username_folded ON radusergroup (lower(username COLLATE "C"));
-- One row per attribute and case-folded name: "BOB" cannot get a password row beside "bob".
CREATE UNIQUE INDEX radcheck_username_folded_attribute ON radcheck (lower(username COLLATE "C"), attribute);

INSERT INTO vpnprov_migrations (version, name) VALUES (2, 'identities');
