/*-------------------------------------------------------------------------
 *
 * spi_util.h
 *	  Small SPI helpers: reading a column of the last result, and building
 *	  array parameters.  No state, no locks.
 *
 * IDENTIFICATION
 *	  src/spi_util.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_SPI_UTIL_H
#define A2_SPI_UTIL_H

#include "executor/spi.h"
#include "storage/itemptr.h"
#include "utils/jsonb.h"

/* Column `col` (1-based; the statement's column enum) of row `row` of SPI_tuptable */
extern Datum a2_col(uint64 row, int col, bool *isnull);
extern int64 a2_col_int64(uint64 row, int col);
extern char *a2_col_text(uint64 row, int col);	/* NULL when SQL NULL */
extern bool a2_col_bool(uint64 row, int col);
/* A tid column (a row version, ctid) copied into *tid; false when SQL NULL */
extern bool a2_col_tid(uint64 row, int col, ItemPointer tid);

/* Array parameters: NULL entries (or nulls[i], for int8) become SQL NULL elements. */
extern Datum a2_text_array(char **values, int count);
extern Datum a2_jsonb_array(Jsonb **values, int count);
extern Datum a2_int8_array(int64 *values, bool *nulls, int count);
extern Datum a2_bool_array(bool *values, int count);
extern Datum a2_int4_array(int32 *values, bool *nulls, int count);

#endif							/* A2_SPI_UTIL_H */
