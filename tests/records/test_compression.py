"""records 0005: the large columns are compressed with lz4 where PostgreSQL offers it (else nothing changes)."""
import importlib

import pytest
from django.db import connection

COLUMNS = importlib.import_module("records.migrations.0005_lz4_compression").COLUMNS


@pytest.mark.django_db
def test_the_large_columns_use_lz4_on_a_postgresql_that_has_it():
    if connection.vendor != "postgresql":
        pytest.skip("lz4 column compression is PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        if not cursor.fetchone()[0]:
            pytest.skip("this PostgreSQL was built without lz4")
        found = {}
        for table, column in COLUMNS:
            cursor.execute("SELECT a.attcompression FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                           "WHERE c.relname = %s AND a.attname = %s", [table, column])
            found[table, column] = cursor.fetchone()[0]
    assert found == {column: "l" for column in COLUMNS}
