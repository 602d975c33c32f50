import type { ClickHouseSettings } from '@clickhouse/client';

/** Session-wide settings applied once when the embedded engine opens (the server gets them per request). */
export const SESSION_SETTINGS: ClickHouseSettings = {
  date_time_input_format: 'best_effort',
  output_format_json_quote_decimals: 1,
  output_format_json_quote_64bit_integers: 1,
};
