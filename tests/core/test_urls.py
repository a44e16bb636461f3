"""Store URLs shown to people never carry a password, wherever libpq would take one."""

from __future__ import annotations

import pytest

from workrail.core.urls import redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql:///db", "postgresql:///db"),
        ("postgresql://u@h/db?password=s3cret", "postgresql://u@h/db?password=***"),
        ("postgresql://u@h/db?sslpassword=s3cret", "postgresql://u@h/db?sslpassword=***"),
        (
            "postgresql://u:pw@h/db?sslmode=require&password=s3cret&application_name=x",
            "postgresql://u:***@h/db?sslmode=require&password=***&application_name=x",
        ),
        ("postgres://h/db?PASSWORD=s3cret", "postgres://h/db?PASSWORD=***"),
        ("postgresql://h/db?pass%77ord=s3cret", "postgresql://h/db?pass%77ord=***"),
        ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),  # an unescaped @ in it
        ("postgresql://u:pw@h1:5432,h2:5433/db", "postgresql://u:***@h1:5432,h2:5433/db"),
        ("postgresql://u:pw@[::1/db", "postgresql://u:***@[::1/db"),  # not a valid URL
        ("postgresql://u:p?s3cret@h/db", "postgresql://u:***@h/db"),  # libpq: all password
        ("postgresql://u:p#s3cret@h/db", "postgresql://u:***@h/db"),
        ("postgresql://h?password=s3cret@x/y", "postgresql://h?password=***"),
        ("postgresql://h/db?password=s3cret#frag", "postgresql://h/db?password=***"),
        ("host=db password=s3cret dbname=w", "host=db password=*** dbname=w"),
        ("host=db password = 's3 cret' dbname=w", "host=db password = *** dbname=w"),
        ("host=db sslpassword=s3cret", "host=db sslpassword=***"),
        ("files", "files"),
    ],
)
def test_no_password_survives(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "s3cret" not in redact_url(url)
    assert "s3 cret" not in redact_url(url)
