-- API tokens gain the `auditor` role (sqlite 20261205000200_auditor_role).
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
    CHECK (role IN ('agent', 'human', 'admin', 'auditor'));
