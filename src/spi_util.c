/*-------------------------------------------------------------------------
 *
 * spi_util.c
 *	  Column readers and array builders for SPI (spi_util.h).
 *
 * IDENTIFICATION
 *	  src/spi_util.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "spi_util.h"

Datum
a2_col(uint64 row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						 col, isnull);
}

int64
a2_col_int64(uint64 row, int col)
{
	bool		isnull;
	Datum		d = a2_col(row, col, &isnull);

	if (isnull)
		elog(ERROR, "unexpected null in column %d", col);
	switch (SPI_gettypeid(SPI_tuptable->tupdesc, col))
	{
		case INT4OID:
			return DatumGetInt32(d);
		case INT8OID:
			return DatumGetInt64(d);
		default:
			elog(ERROR, "column %d is not an integer", col);
	}
	return 0;					/* keep compiler quiet */
}

char *
a2_col_text(uint64 row, int col)
{
	bool		isnull;
	Datum		d = a2_col(row, col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

bool
a2_col_bool(uint64 row, int col)
{
	bool		isnull;
	Datum		d = a2_col(row, col, &isnull);

	return !isnull && DatumGetBool(d);
}

bool
a2_col_tid(uint64 row, int col, ItemPointer tid)
{
	bool		isnull;
	Datum		d = a2_col(row, col, &isnull);

	if (!isnull)
		ItemPointerCopy((ItemPointer) DatumGetPointer(d), tid);
	return !isnull;
}

static Datum
build_array(Datum *values, bool *nulls, int count, Oid elemtype,
			int16 typlen, bool byval, char align)
{
	int			dims[1] = {count};
	int			lbs[1] = {1};

	return PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs,
											  elemtype, typlen, byval, align));
}

Datum
a2_text_array(char **values, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));
	bool	   *n = palloc(sizeof(bool) * Max(count, 1));

	for (int i = 0; i < count; i++)
	{
		n[i] = values[i] == NULL;
		d[i] = n[i] ? (Datum) 0 : CStringGetTextDatum(values[i]);
	}
	return build_array(d, n, count, TEXTOID, -1, false, TYPALIGN_INT);
}

Datum
a2_jsonb_array(Jsonb **values, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));
	bool	   *n = palloc(sizeof(bool) * Max(count, 1));

	for (int i = 0; i < count; i++)
	{
		n[i] = values[i] == NULL;
		d[i] = n[i] ? (Datum) 0 : JsonbPGetDatum(values[i]);
	}
	return build_array(d, n, count, JSONBOID, -1, false, TYPALIGN_INT);
}

Datum
a2_int8_array(int64 *values, bool *nulls, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));

	for (int i = 0; i < count; i++)
		d[i] = Int64GetDatum(values[i]);
	return build_array(d, nulls, count, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

Datum
a2_int4_array(int32 *values, bool *nulls, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));

	for (int i = 0; i < count; i++)
		d[i] = Int32GetDatum(values[i]);
	return build_array(d, nulls, count, INT4OID, 4, true, TYPALIGN_INT);
}

Datum
a2_bool_array(bool *values, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));

	for (int i = 0; i < count; i++)
		d[i] = BoolGetDatum(values[i]);
	return build_array(d, NULL, count, BOOLOID, 1, true, TYPALIGN_CHAR);
}
