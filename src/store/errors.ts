/**
 * A ClickHouse server error. Checked by shape, not `instanceof`: chdb/connection raises the
 * ClickHouseError of its own copy of @clickhouse/client-common, a different class from the client's.
 */
export interface ClickHouseErrorLike extends Error {
  code: string;
  type?: string;
}

export function isClickHouseError(err: unknown): err is ClickHouseErrorLike {
  return (
    err instanceof Error &&
    (err.name === 'ClickHouseError' || err.constructor?.name === 'ClickHouseError') &&
    /^\d+$/.test(String((err as { code?: unknown }).code))
  );
}

/**
 * ClickHouse error codes that mean "this data (or statement) can never be written as it is":
 * retrying will not help, so the writer isolates the offending rows instead.
 * Everything else (network errors, timeouts, 5xx without a ClickHouse error, overload codes such as
 * TOO_MANY_PARTS or MEMORY_LIMIT_EXCEEDED, keeper hiccups) is transient.
 * Codes: https://github.com/ClickHouse/ClickHouse/blob/master/src/Common/ErrorCodes.cpp
 */
const DATA_ERROR_CODES = new Set([
  6, // CANNOT_PARSE_TEXT
  8, // THERE_IS_NO_COLUMN
  16, // NO_SUCH_COLUMN_IN_TABLE
  25, // CANNOT_PARSE_ESCAPE_SEQUENCE
  26, // CANNOT_PARSE_QUOTED_STRING
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  32, // ATTEMPT_TO_READ_AFTER_EOF
  33, // CANNOT_READ_ALL_DATA
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  43, // ILLEGAL_TYPE_OF_ARGUMENT
  53, // TYPE_MISMATCH
  69, // ARGUMENT_OUT_OF_BOUND
  70, // CANNOT_CONVERT_TYPE
  72, // CANNOT_PARSE_NUMBER
  117, // INCORRECT_DATA
  130, // CANNOT_READ_ARRAY_FROM_TEXT
  131, // TOO_LARGE_STRING_SIZE
  190, // SIZES_OF_ARRAYS_DONT_MATCH
  321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
  376, // CANNOT_PARSE_UUID
  377, // ILLEGAL_SYNTAX_FOR_DATA_TYPE
  407, // DECIMAL_OVERFLOW
  441, // CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING
  467, // CANNOT_PARSE_BOOL
  691, // UNKNOWN_ELEMENT_OF_ENUM
]);

/**
 * Codes that no retry and no bisection will fix: the statement or the store's setup is wrong (a table or
 * database missing, a read-only or unauthorised user). The batch fails back to its callers, so a job fails
 * with the reason instead of retrying forever; nothing is dead-lettered row by row.
 */
const PERMANENT_ERROR_CODES = new Set([
  60, // UNKNOWN_TABLE
  62, // SYNTAX_ERROR
  81, // UNKNOWN_DATABASE
  164, // READONLY
  497, // ACCESS_DENIED
]);

export type StoreErrorKind = 'data' | 'permanent' | 'transient';

export function classifyStoreError(err: unknown): StoreErrorKind {
  if (isClickHouseError(err)) {
    const code = Number(err.code);
    if (DATA_ERROR_CODES.has(code)) return 'data';
    if (PERMANENT_ERROR_CODES.has(code)) return 'permanent';
    return 'transient';
  }
  return 'transient';
}

/** The code and type of a store error without its message (which may quote row data): what logs carry. */
export function storeErrorCode(err: unknown): string {
  if (isClickHouseError(err)) return `ClickHouse ${err.type ?? 'error'} (code ${err.code})`;
  const code = (err as { code?: unknown } | null)?.code;
  return code ? String(code) : err instanceof Error ? err.name : 'error';
}

/** For tests: every classified code, so a test can check them against the engine's names. */
export const CLASSIFIED_CODES = { data: [...DATA_ERROR_CODES], permanent: [...PERMANENT_ERROR_CODES] };

/** A short description for logs and ingest_rejects: the ClickHouse code and type, or the network error code. */
export function describeStoreError(err: unknown): string {
  if (isClickHouseError(err)) {
    const firstLine = err.message.split('\n')[0].slice(0, 500);
    return `ClickHouse ${err.type ?? 'error'} (code ${err.code}): ${firstLine}`;
  }
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return code ? `${String(code)}: ${err.message}` : err.message;
  }
  return String(err);
}

/** Codes of a query stopped by a limit it was given (time, memory, result size): the asker's range, not a fault. */
const QUERY_LIMIT_CODES: Record<number, 'time' | 'memory' | 'result rows'> = {
  159: 'time', // TIMEOUT_EXCEEDED
  241: 'memory', // MEMORY_LIMIT_EXCEEDED
  396: 'result rows', // TOO_MANY_ROWS_OR_BYTES
};

/** Which per-query limit stopped the query, if one did. */
export function queryLimitHit(err: unknown): 'time' | 'memory' | 'result rows' | undefined {
  return isClickHouseError(err) ? QUERY_LIMIT_CODES[Number(err.code)] : undefined;
}
