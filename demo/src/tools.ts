// The demo's function tool: it runs here in the page, so the answer shows the visitor's own clock.
import { tool } from '@openai/agents/realtime';

export const getLocalTime = tool({
  name: 'get_local_time',
  description: "The current date and time on the user's device, with the time zone.",
  parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
  strict: true,
  execute: async () => {
    const now = new Date();
    return JSON.stringify({
      local_time: now.toLocaleString(undefined, { dateStyle: 'full', timeStyle: 'short' }),
      time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    });
  },
});
