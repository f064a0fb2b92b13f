-- A notice being mailed is claimed for a while instead of locked: no transaction stays
-- open across an SMTP conversation (an open transaction holds back the API lists'
-- commit horizon for every project).
ALTER TABLE notices ADD COLUMN mail_claimed_until timestamptz;
