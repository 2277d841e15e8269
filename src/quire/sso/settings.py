"""The `[sso]` settings of quire.toml: declared with the other sections in
`quire.config` (settings import no module above them), named here for the
single sign-on code."""

from quire.config import MAPPED_FIELDS, SsoSettings

__all__ = ["MAPPED_FIELDS", "SsoSettings"]
