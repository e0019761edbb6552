"""The chat template that lets the embedded SmolLM2-135M-Instruct model call tools.

Used by ``miniagent.providers.local`` as llama.cpp's ``chat_template`` (with ``use_jinja``). The
GGUF's own template is plain ChatML without tools, so llama.cpp would ignore ``tools`` and the
model would invent answers. This one:

- lists the tools in a ``<tools>`` block of the system turn and asks for the Hermes form
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, which llama.cpp's parser turns into
  OpenAI ``tool_calls`` deltas and Anthropic ``tool_use`` blocks;
- shows five short example exchanges (a write, four reads: request -> tool call -> ``tool`` turn
  with the content -> a one-line answer quoting it). With fewer examples the 135M model answered
  in prose without calling; the examples are only rendered when the request has tools;
- renders tool results as a ``tool`` turn (in a ``user`` turn the model copies the examples);
- appends `` (use a tool)`` to the last message when it is the user's and tools are offered, and
  says "Your first reply to a request is a <tool_call>": measured on six prompts, this doubled the
  smallest log-probability margin of the ``<`` (start of ``<tool_call>``) first token over the
  best prose token (0.22 -> 0.65 with the six built-in tools, 0.30 -> 0.76 with ``read_file``
  alone). Without it the margin was small enough that a prompt-cache hit (numerically slightly
  different logits) once flipped a call into a made-up answer.

The template engine (llama.cpp's minja/jinja) has no ``| list`` filter on mappings. The
``<tool_call>`` form is read back by ``miniagent.providers._markup``.
"""

from __future__ import annotations

__all__ = ["CHAT_TEMPLATE"]

CHAT_TEMPLATE: str = """{%- set ns = namespace(system="You are a helpful assistant.") -%}
{%- if messages and messages[0].role == "system" -%}{%- set ns.system = messages[0].content -%}{%- endif -%}
<|im_start|>system
{{ ns.system }}
{%- if tools %}

You can call tools. The tools are listed inside <tools></tools>:
<tools>
{% for tool in tools -%}
{{ (tool.function if tool.function is defined else tool) | tojson }}
{% endfor -%}
</tools>
To call a tool, reply with only:
<tool_call>
{"name": "TOOL_NAME", "arguments": {"ARGUMENT": "VALUE"}}
</tool_call>
Always call a tool first; never guess what a file contains. \
Your first reply to a request is a <tool_call>. \
The result comes back in a tool turn. Then answer the user in one short line that quotes the result.
{%- endif %}<|im_end|>
{% if tools -%}
<|im_start|>user
Save the text 'done' in status.txt<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "write_file", "arguments": {"path": "status.txt", "content": "done"}}
</tool_call><|im_end|>
<|im_start|>tool
wrote 4 characters to status.txt<|im_end|>
<|im_start|>assistant
Done: status.txt now contains "done".<|im_end|>
<|im_start|>user
Please read the file todo.txt and tell me what it says<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "todo.txt"}}
</tool_call><|im_end|>
<|im_start|>tool
Buy milk and eggs.<|im_end|>
<|im_start|>assistant
It says: "Buy milk and eggs."<|im_end|>
<|im_start|>user
Show me src/main.py<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "src/main.py"}}
</tool_call><|im_end|>
<|im_start|>tool
print('hi')<|im_end|>
<|im_start|>assistant
It says: "print('hi')"<|im_end|>
<|im_start|>user
Read data.csv<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "data.csv"}}
</tool_call><|im_end|>
<|im_start|>tool
a,b
1,2<|im_end|>
<|im_start|>assistant
It says: "a,b 1,2"<|im_end|>
<|im_start|>user
What is in docs/intro.md?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "docs/intro.md"}}
</tool_call><|im_end|>
<|im_start|>tool
Welcome to the project.<|im_end|>
<|im_start|>assistant
It says: "Welcome to the project."<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == "system" -%}
{%- elif message.role == "assistant" -%}
<|im_start|>assistant
{% if message.content %}{{ message.content }}{% endif %}
{%- if message.tool_calls %}
{%- for call in message.tool_calls %}
{%- set fn = call.function if call.function is defined else call %}
{%- if not loop.first or message.content %}
{% endif -%}
<tool_call>
{"name": "{{ fn.name }}", "arguments": \
{% if fn.arguments is string %}{{ fn.arguments }}{% else %}{{ fn.arguments | tojson }}{% endif %}}
</tool_call>
{%- endfor %}
{%- endif %}<|im_end|>
{% elif message.role == "tool" -%}
<|im_start|>tool
{{ message.content }}<|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ message.content }}\
{% if tools and loop.last and message.role == "user" %} (use a tool){% endif %}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
"""
