"""A small MCP server (the official Python SDK's MCPServer, over stdio) for
tern's tests: its one tool asks the person for a value through elicitation
and says what it got back. Run with the SDK's venv:

    python form_server.py
"""

from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("forms")


class Table(BaseModel):
    guests: int = Field(description="How many people")


@server.tool()
async def book(ctx: Context) -> str:
    """Book a table, asking how many people come."""
    result = await ctx.elicit(message="Booking a table", schema=Table)
    if result.action == "accept":
        return f"booked for {result.data.guests}"
    return f"not booked: {result.action}"


if __name__ == "__main__":
    server.run()
