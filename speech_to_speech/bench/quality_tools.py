"""The tools of ``bench quality`` (the default ``--tool-module``): a small home assistant with fixed answers.

Each request of the tool category knows which call it needs; the answers
are fixed so that the spoken follow-up can be checked for the result too.
Usable like any tool module: ``speech-to-speech local --tool-module
speech_to_speech.bench.quality_tools``.
"""

from __future__ import annotations

from typing import Any

TOOLS: list[dict[str, Any]] = [
    {"name": "get_weather", "description": "Get the current weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name."}},
                    "required": ["city"]}},
    {"name": "set_timer", "description": "Start a countdown timer.",
     "parameters": {"type": "object",
                    "properties": {"minutes": {"type": "integer", "description": "Length of the timer in minutes."}},
                    "required": ["minutes"]}},
    {"name": "get_room_temperature", "description": "Read the temperature of the room the user is in, in Celsius.",
     "parameters": {"type": "object", "properties": {}}},
    {"name": "turn_off_lights", "description": "Turn off the lights in a room of the house.",
     "parameters": {"type": "object", "properties": {"room": {"type": "string", "description": "The room."}},
                    "required": ["room"]}},
    {"name": "add_to_shopping_list", "description": "Add an item to the user's shopping list.",
     "parameters": {"type": "object", "properties": {"item": {"type": "string", "description": "What to buy."}},
                    "required": ["item"]}},
]


def _answer(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if name == "get_weather":
        city = str(arguments.get("city", ""))
        rainy = city.strip().lower() == "london"
        return {"city": city, "forecast": "light rain" if rainy else "sunny", "celsius": 14 if rainy else 22}
    if name == "set_timer":
        return {"timer_set": True, "minutes": arguments.get("minutes")}
    if name == "get_room_temperature":
        return {"celsius": 21}
    if name == "turn_off_lights":
        return {"room": arguments.get("room"), "lights": "off"}
    if name == "add_to_shopping_list":
        return {"added": arguments.get("item")}
    return {"error": f"unknown tool {name}"}


async def execute_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return _answer(name, arguments)
