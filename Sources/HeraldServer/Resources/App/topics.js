// Herald web app: topics (docs/webapp.md, "Topics"; docs/api.md, "Topics"). Creates a topic, joins one with its topic
// id and join code, and shows the topics this browser knows: Herald shows a topic id once (when it is created or
// joined), so the app keeps each in IndexedDB (settings key `topics`) to show and send to it later.
"use strict";

const HeraldTopics = (() => {
  const $ = (id) => document.getElementById(id);
  const state = { device: null, notice: () => {} };

  function headers(json) {
    const fields = { Authorization: "Basic " + btoa(`${state.device.user_id}:${state.device.device_secret}`) };
    if (json) fields["Content-Type"] = "application/json";
    return fields;
  }

  async function call(method, path, body) {
    const response = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
    let answer = null;
    try { answer = await response.json(); } catch (error) { /* 204 */ }
    if (!response.ok) throw new Error((answer && answer.error) || `HTTP ${response.status}`);
    return answer;
  }

  const saved = async () => (await HeraldDB.get("topics")) || [];
  const save = (topics) => HeraldDB.set("topics", topics);

  async function remember(topicID, answer) {
    const topics = (await saved()).filter((topic) => topic.topic_id !== topicID);
    topics.push({ topic_id: topicID, name: answer.name || "", member_id: answer.member_id });
    await save(topics);
  }

  async function forget(topicID) {
    await save((await saved()).filter((topic) => topic.topic_id !== topicID));
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function button(label, work, className) {
    const node = element("button", className, label);
    node.type = "button";
    node.addEventListener("click", () => {
      node.disabled = true;
      Promise.resolve().then(work).catch((error) => state.notice(error.message || String(error), true)).finally(() => { node.disabled = false; });
    });
    return node;
  }

  async function create() {
    const answer = await call("POST", "/api/push/topics", { name: $("topic-name").value.trim() });
    await remember(answer.topic_id, answer);
    $("topic-name").value = "";
    $("topic-code").textContent = answer.join_code;
    $("topic-code-box").hidden = false;
    state.notice(`Topic created. Give another device its topic id and this join code: ${answer.join_code}`);
    await render();
  }

  async function join() {
    const topicID = $("join-topic").value.trim().toLowerCase();
    const answer = await call("POST", `/api/push/topics/${encodeURIComponent(topicID)}/members`, { join_code: $("join-code").value.trim() });
    await remember(topicID, answer);
    $("join-topic").value = "";
    $("join-code").value = "";
    state.notice(`Joined ${answer.name || "the topic"}: its sends reach this browser.`);
    await render();
  }

  function item(topic, answer) {
    const node = element("li", "item topic");
    const meta = element("div", "meta");
    meta.append(element("span", "title", answer ? (answer.name || "Unnamed topic") : (topic.name || "Topic")));
    meta.append(element("span", "", answer ? `${answer.member_count} member${answer.member_count === 1 ? "" : "s"}` : "not reachable"));
    node.append(meta);
    const id = element("code", "topic-id", topic.topic_id);
    node.append(id);
    if (answer && Array.isArray(answer.members)) {
      const list = element("ul", "members");
      for (const member of answer.members) {
        const row = element("li", "", `${member.name || "Unnamed device"} · ${member.platform || "?"}${member.is_creator ? " · creator" : ""}`);
        if (!member.is_creator) {
          row.append(" ", button("Remove", async () => {
            await call("DELETE", `/api/push/topics/${topic.topic_id}/members/${member.member_id}`);
            await render();
          }, "danger"));
        }
        list.append(row);
      }
      node.append(list);
    }
    const buttons = element("div", "buttons");
    buttons.append(button("Copy topic id", () => navigator.clipboard.writeText(topic.topic_id)));
    if (answer && answer.is_creator) {
      buttons.append(button("New join code", async () => {
        const rotated = await call("POST", `/api/push/topics/${topic.topic_id}/join_code`, {});
        state.notice(`The new join code is ${rotated.join_code}; the old one no longer works.`);
      }));
      buttons.append(button("Delete topic", async () => {
        if (!window.confirm("Delete this topic for every member?")) return;
        await call("DELETE", `/api/push/topics/${topic.topic_id}`);
        await forget(topic.topic_id);
        await render();
      }, "danger"));
    } else {
      buttons.append(button(answer ? "Leave" : "Forget", async () => {
        if (answer) await call("DELETE", `/api/push/topics/${topic.topic_id}/members/me`);
        await forget(topic.topic_id);
        await render();
      }, "danger"));
    }
    node.append(buttons);
    return node;
  }

  async function render() {
    const list = $("topics");
    const topics = await saved();
    const items = await Promise.all(topics.map(async (topic) => {
      const answer = await call("GET", `/api/push/topics/${topic.topic_id}`).catch(() => null);
      return item(topic, answer);
    }));
    list.replaceChildren(...items);
    $("topics-empty").hidden = topics.length > 0;
  }

  let wired = false;
  return {
    // Shows the topics card for `device` (the page's `notice` reports errors).
    async start(device, notice) {
      state.device = device;
      state.notice = notice;
      if (!wired) {
        wired = true;
        $("topic-create").addEventListener("click", () => create().catch((error) => notice(error.message, true)));
        $("topic-join").addEventListener("click", () => join().catch((error) => notice(error.message, true)));
        for (const form of ["topic-create-form", "topic-join-form"]) $(form).addEventListener("submit", (event) => event.preventDefault());
      }
      await render();
    },
  };
})();
