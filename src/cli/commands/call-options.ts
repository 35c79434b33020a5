/** Environment variable holding the A2A key when no --key-file is given. */
export const A2A_KEY_ENV = 'A2A_KEY';

/** Options of `call`. */
export interface CallOptions {
  to: string;
  goal: string;
  keyFile?: string;
  baseUrl?: string;
  answers?: string;
  yes?: boolean;
  emulator?: boolean;
  patienceMinutes?: number;
}
