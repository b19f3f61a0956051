-- vpnprov accounts database, migration 7: a session's recorded Stop is final.
--
-- A Stop can reach the database twice: the node's relay sends a record again when no answer came back
-- (the answer may have been lost after the row was written), and a RADIUS server replays its buffer.
-- Each copy's time is its arrival here less its Acct-Delay-Time (policy.d/vpnprov), both in whole
-- seconds, so two copies of one Stop can differ by a second. The first one written stays: a copy
-- that arrives after it changes neither the stop time, the session time nor the cause (its octets
-- are the same record's; migration 5 keeps the counters from going down). The one exception is a
-- session that vpnprov closed itself when its node restarted ('NAS-Reboot', migration 4): the node's
-- own Stop, replayed later, knows better when the session ended.
CREATE FUNCTION vpn_stop_is_final() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF OLD.acctstoptime IS NOT NULL AND coalesce(OLD.acctterminatecause, '') <> 'NAS-Reboot' THEN
        NEW.acctstoptime := OLD.acctstoptime;
        NEW.acctsessiontime := OLD.acctsessiontime;
        NEW.acctterminatecause := OLD.acctterminatecause;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER radacct_stop_is_final BEFORE UPDATE ON radacct
    FOR EACH ROW EXECUTE FUNCTION vpn_stop_is_final();

INSERT INTO vpnprov_migrations (version, name) VALUES (7, 'final-stop');
