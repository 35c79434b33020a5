/** The A2A call emulator: scripted phone calls over the JSON-RPC interface of the call API. */
export { startA2aEmulator, a2aRequestHandler, A2A_ADMIN_PATH, type RunningA2aEmulator } from './server.js';
export { A2aEmulator, type A2aEmulatorOptions, type A2aEmulatorKey, type CallRecord, type RequestRecord } from './emulator.js';
export { DEMO_SCRIPT, type CallScript, type ScriptStep, type ScriptBook } from './script.js';
export { DEFAULT_SSE_STYLE, type SseStyle } from './sse-writer.js';
export { DEFAULT_MODES, MODE_PRESETS, isModePreset, presetSettings, type A2aModes, type ModePresetName } from './modes.js';
