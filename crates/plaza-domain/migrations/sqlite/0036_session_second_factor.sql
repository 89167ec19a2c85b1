-- When a session passed a second factor (a TOTP or recovery code at its
-- sign-in, or the code that turned two-factor sign-in on in it); NULL for
-- a sign-in by password or provider alone. With `admin_totp_required`, only
-- such a session carries an administrator's authority.
ALTER TABLE sessions ADD COLUMN second_factor_at BIGINT;
