// English and Korean. The Korean labels keep the names of states, cards and held messages. The language
// comes from the browser unless the person chose one; the choice is remembered on this phone.

const en = {
  app: "claude-bridge",
  // states and session marks
  st_starting: "Starting", st_idle: "Idle", st_busy: "Working", st_coding: "Coding",
  st_waiting: "Needs you", st_ended: "Stopped",
  mk_ended: "Ended", mk_resting: "Resting", mk_moving: "Moving", mk_offline: "Mac offline",
  // cards
  ck_permission: "Permission", ck_question: "Question", ck_plan: "Plan",
  ck_dialog: "Terminal", ck_keyed: "Terminal", ck_stuck: "Waiting for instructions",
  // connection
  band_reconnecting: "Reconnecting…",
  band_unreachable: "Relay unreachable — showing what this phone saved",
  band_mac_offline: "Mac offline — {name}, last seen {ago}. Showing the saved conversation.",
  live: "Live", connecting: "Connecting…",
  // overview
  needs_you_n: "{n} session needs you", needs_you_n_pl: "{n} sessions need you",
  nothing_needs_you: "Nothing needs you", macs: "Macs", online: "online",
  offline_seen: "offline · last seen {ago}", no_sessions: "No sessions on this Mac yet.",
  no_macs: "No Mac is paired yet. On a Mac, run “claude-bridge pair --kind device” and start its agent.",
  new_session: "New session", settings: "Settings", back: "Back",
  never: "never", just_now: "just now", min_ago: "{n} min ago", h_ago: "{n} h ago", d_ago: "{n} d ago",
  // session view
  earlier: "Show earlier messages", loading: "Loading…", start_of_history: "Start of the conversation",
  history_unavailable: "Older messages are on the Mac, which is offline. They will load when it is back.",
  history_gap: "Some messages could not be loaded while the Mac was offline.",
  thinking: "Thinking", show_all_lines: "Show all {n} lines", show_all: "Show all ({n} characters)", show_less: "Show less",
  cut_at: "cut by the relay at {n} of {full} characters", full_loading: "Reading the whole text from the Mac…",
  full_read: "the whole text ({full} characters), read from the Mac", full_failed: "The whole text could not be read: {why}", writing: "Claude is writing…",
  subagent: "subagent", new_file: "new file", input: "Input", error: "Error",
  claude: "Claude",
  msg_placeholder: "Message Claude…", msg_placeholder_ended: "Send a message to reopen this session…",
  send: "Send", send_now: "Send now", interrupt: "Interrupt", sending: "Sending…",
  send_now_hint: "Send now interrupts the running turn and types at once.",
  send_after: "After turn", send_after_hint: "Typed only once the running turn has ended.",
  when_held: "at a safe point", when_now: "now", when_after_turn: "after this turn",
  attach: "Attach a file", attachments: "Attached files", att_image: "{type} image", att_file: "{type} file",
  att_bad_type: "{name} cannot be attached: images, PDF and text files can", att_too_many: "At most {n} files per message",
  att_remove: "Remove {name}",
  change_mode: "Change mode", change_model: "Change model", model_label: "Model (e.g. sonnet, opus, claude-sonnet-4-5)",
  mode_set: "Mode: {mode}", model_set: "Model: {model}", reopened_in: "Reopening the session on its Mac in {mode} mode…",
  held_title: "Held messages", held_hint: "Typed when the turn reaches a safe point.",
  hs_held: "Held", hs_typing: "Typing…", hs_typed: "Typed", hs_cancelled: "Cancelled", hs_failed: "Failed",
  hs_sending: "Sending…",
  read_only_note: "Read-only view: nothing can be sent from here.",
  leave_read_only: "Open normally", open_read_only: "Open read-only",
  reopened: "Reopening the session on its Mac…",
  actions: "Session actions", rename: "Rename", group: "Group", lock: "Lock", unlock: "Unlock",
  move_up: "Move up", move_down: "Move down", rest: "Rest", end: "End", reopen: "Reopen",
  locked: "Locked", cancel: "Cancel", save: "Save", close: "Close",
  rename_label: "New title", group_label: "Group name (empty = no group)",
  confirm_end: "End this session? Claude Code stops; the session stays listed and can be reopened.",
  confirm_rest: "Let this session rest? The terminal stops; sending a message reopens it.",
  fork: "Fork", forked: "Forked: a new session with the same history", fork_of: "fork of {title}",
  delete: "Delete", deleted_ok: "Session deleted",
  confirm_delete: "Delete this session? Claude Code stops and its events are deleted here and on its Mac. Claude Code's own transcript on the Mac is kept.",
  ns_worktree: "In a new git worktree", ns_branch: "Branch (empty: a name of its own)",
  // cards
  card_pending: "Sending your answer…", card_waiting: "Answered — waiting for the Mac to confirm…",
  card_closed: "This card already closed on the Mac.",
  card_changed: "The dialog changed; nothing was pressed. See the new card.",
  card_not_ready: "Its dialog is not on the Mac's screen yet.",
  card_from_screen: "Read from the screen: may be cut short.",
  card_always: "Always allow this kind of tool in this session",
  ck_denied: "Blocked by auto mode",
  card_denied_note: "Claude Code waits a little for this answer; after that the refusal stands.",
  // grants (web/js/grants.js)
  gr_title: "Allowed while this claude runs", gr_none: "None: no card was answered with “always”.",
  gr_note: "From a card's “always”. They end when claude is reopened, revived or moved; the rules above stay.",
  gr_cat: "{cat} tools", gr_from: "from the {tool} card · {ago}", gr_revoke: "Revoke", gr_revoke_label: "Revoke {what}",
  gr_revoked: "Revoked: those tools ask again.", gr_offline: "The Mac is offline: its grants cannot be read now.",
  card_submit: "Submit", card_type: "Type something", card_send: "Send",
  card_read_only: "Open the session normally to answer.",
  tool_failed: "failed", tool_done: "done", tool_line: "1 line", tool_lines: "{n} lines",
  ml_compacted: "📦 context compacted", ml_cleared: "🧹 /clear · conversation cleared",
  ml_interrupted: "Interrupted by user", ml_interrupted_tool: "Interrupted by user during a tool use",
  ml_rejected: "Rejected by user", ml_revived: "🔁 The Mac restarted, so the session was reopened in the same conversation",
  card_step: "question {n} of {of}", card_show_all: "Show all",
  card_send_held: "Messages sent now wait for this answer.",
  card_send_dismiss: "A message sent now closes this card and goes to Claude.",
  plan_keep: "Keep planning", plan_feedback: "What should change in the plan? (optional)",
  new_messages: "New messages ↓", sent_as_one: "{n} messages sent as one",
  tool: "Tool", command: "Command", file: "File",
  // new session
  ns_title: "New session", ns_mac: "Mac", ns_folder: "Folder", ns_mode: "Permission mode",
  ns_prompt: "First message (optional)", ns_model: "Model (optional)", ns_start: "Start",
  ns_offline: "(offline)", ns_no_mac: "No Mac is online.",
  pm_default: "Ask before tools (default)", pm_acceptEdits: "Accept file edits", pm_plan: "Plan first",
  pm_auto: "Auto (no dialogs)", pm_manual: "Manual", pm_bypassPermissions: "Bypass permissions",
  pm_dontAsk: "Don't ask",
  // settings
  language: "Language", notifications: "Notifications", notif_on: "Notify me when a session needs me",
  notif_turn_end: "Also when a turn ends", notif_test: "Send a test notification",
  notif_unsupported: "This browser cannot receive notifications here (install the page to the home screen, over HTTPS).",
  notif_denied: "Notifications are blocked for this page in the browser's settings.",
  notif_enabled: "Notifications are on.", notif_disabled: "Notifications are off.",
  phones: "Paired phones", this_phone: "this phone", revoke: "Revoke", revoked: "revoked",
  paired: "paired {ago}", seen: "seen {ago}", last_used: "last used {ago}", logout: "Log out", confirm_logout: "Log out of this phone?",
  confirm_revoke: "Revoke {name}? It will have to pair again.",
  agent_version: "agent {v}", claude_version: "Claude Code {v}",
  cv_newer: "Claude Code {v} is newer than this bridge was tested with: cards may be missed",
  cv_older: "Claude Code {v} is older than this bridge was tested with: cards may be read wrong",
  cv_untested: "Claude Code {v} is not a version this bridge was tested with: cards may be read wrong",
  cv_unknown: "This Mac's Claude Code version could not be read: cards may be missed",
  // pairing
  pair_title: "Pair this phone", pair_intro: "Enter the code that “claude-bridge pair” printed, or open its link.",
  pair_code: "Pairing code", pair_name: "Name for this phone", pair_button: "Pair", pairing: "Pairing…",
  paired_ok: "Paired. Opening the control page…",
  not_paired: "This browser is not paired. Run “claude-bridge pair” on the relay's machine and open the link it prints.",
  enter_code: "Enter a code",
  err_unreachable: "The relay cannot be reached. Check the connection and try again.",
  // search, groups, cost, retention
  search: "Search sessions", search_ph: "Title, summary, file, tool…", filters: "Filters", f_state: "State",
  f_group: "Group", f_stage: "Stage", f_mac: "This Mac", f_folder: "This folder", any: "Any", stage_active: "Active",
  archived: "Archived", pinned: "Pinned", deleted: "Deleted", here: "This Mac / this folder", elsewhere: "Other places",
  no_results: "No sessions found.", more_results: "More match: narrow the search.", clear_search: "Clear search",
  tok: "tok", cost: "Cost and usage", src_cost_state: "Claude Code's own cost record", src_estimate: "Estimated from prices",
  tk_input: "Input", tk_output: "Output", tk_cache_read: "Cache read", tk_cache_write: "Cache write", tk_total: "Total tokens",
  by_model: "By model", by_agent: "By subagent", no_price: "No price known for: {m}",
  reset_title: "Use the automatic title", pin: "Pin (keep)", unpin: "Unpin", pinned_ok: "Pinned: it is kept.",
  unpinned_ok: "Unpinned.",
  archived_note: "It is archived, so it is read-only. Pin it to keep it and make it active again.",
  perms: "Permissions", pol_all: "Allow all tools (no dialogs)",
  pol_all_for: "For", pol_all_1h: "1 h", pol_all_session: "Until the session ends", pol_all_until: "Until {time}",
  pol_cats: "By category", pol_tools: "By tool",
  pol_default: "Default", r_allow: "Allow", r_ask: "Ask", r_deny: "Deny", cat_read: "Read", cat_edit: "Edit",
  cat_execute: "Execute", cat_web: "Web", cat_mcp: "MCP", pol_tool: "Tool name", pol_add: "Add", pol_remove: "Remove {tool}",
  pol_note: "A tool's rule beats its category's; any rule beats “Allow all”. Questions and plans always ask.",
  pol_saved: "Saved on the Mac.", pol_offline: "The Mac is offline: permissions change only when it is back.",
  pol_unknown: "Not reported by the Mac yet: showing the default.", pol_read_only: "Open the session normally to change them.",
  sa_running: "running", sa_finished: "finished", sa_failed: "failed", sa_open: "Open the subagent", sa_task: "Task",
  sa_none: "No events yet.", retention: "Retention", ret_ages: "Archived after {a} days idle, deleted {d} days later (0: never).",
  ret_last: "Last run {ago}, {how}", ret_none: "Not run yet.", ret_sum: "archived {a}, made active {r}, deleted {d}",
  ret_counts: "{a} active · {b} archived · {p} pinned", ret_run: "Run now", ret_waiting: "{n} to delete on an offline Mac",
  trig_request: "on request", trig_schedule: "on schedule", ret_next: "next run {at}",
  audit: "Audit log", aud_note: "Every decision on this session's cards, newest first: who answered, or which rule did.",
  aud_none: "No decisions yet.", aud_older: "Older", aud_allow: "Allowed", aud_deny: "Denied", aud_always: "always",
  aud_by_phone: "By {name} · token {token} · from {addr}", aud_by_rule: "By {source}: {rule}",
  aud_src_policy: "the session's rule", aud_src_allow_all: "allow all", aud_src_hook: "a hook"
};

const ko = {
  app: "claude-bridge",
  st_starting: "뜨는 중", st_idle: "대기", st_busy: "작업 중", st_coding: "코딩 중",
  st_waiting: "응답 대기", st_ended: "멈춤",
  mk_ended: "끝남", mk_resting: "휴면", mk_moving: "옮기는 중", mk_offline: "기기 끊김",
  ck_permission: "권한 요청", ck_question: "질문", ck_plan: "플랜 승인",
  ck_dialog: "터미널 확인", ck_keyed: "터미널 확인", ck_stuck: "지시 대기",
  band_reconnecting: "다시 연결하는 중…",
  band_unreachable: "릴레이에 연결할 수 없어요 — 폰에 저장된 내용을 보여 줘요",
  band_mac_offline: "맥 연결 끊김 — {name}, 마지막 연결 {ago}. 저장된 대화를 보여 줘요.",
  live: "연결됨", connecting: "연결하는 중…",
  needs_you_n: "응답을 기다리는 세션 {n}개", needs_you_n_pl: "응답을 기다리는 세션 {n}개",
  nothing_needs_you: "기다리는 세션이 없어요", macs: "맥", online: "연결됨",
  offline_seen: "끊김 · 마지막 연결 {ago}", no_sessions: "이 맥에는 아직 세션이 없어요.",
  no_macs: "연결된 맥이 없어요. 맥에서 “claude-bridge pair --kind device”를 실행하고 에이전트를 켜세요.",
  new_session: "새 세션", settings: "설정", back: "뒤로",
  never: "없음", just_now: "방금", min_ago: "{n}분 전", h_ago: "{n}시간 전", d_ago: "{n}일 전",
  earlier: "이전 대화 보기", loading: "불러오는 중…", start_of_history: "대화의 처음이에요",
  history_unavailable: "이전 대화는 맥에 있는데 맥이 끊겨 있어요. 맥이 돌아오면 불러와요.",
  history_gap: "맥이 끊겨 있는 동안 일부 대화를 불러오지 못했어요.",
  thinking: "생각", show_all_lines: "{n}줄 모두 보기", show_all: "모두 보기 ({n}자)", show_less: "접기",
  cut_at: "릴레이가 {full}자 중 {n}자까지 남겼어요", full_loading: "Mac에서 전체 내용을 읽는 중…",
  full_read: "Mac에서 읽은 전체 내용 ({full}자)", full_failed: "전체 내용을 읽지 못했어요: {why}", writing: "Claude가 쓰는 중…",
  subagent: "하위 에이전트", new_file: "새 파일", input: "입력", error: "오류",
  claude: "Claude",
  msg_placeholder: "Claude에게 보낼 글…", msg_placeholder_ended: "글을 보내면 세션을 다시 열어요…",
  send: "보내기", send_now: "지금 보내기", interrupt: "중단", sending: "보내는 중…",
  send_now_hint: "지금 보내기는 도는 턴을 끊고 바로 넣어요.",
  send_after: "턴 끝나고", send_after_hint: "도는 턴이 끝난 뒤에만 넣어요.",
  when_held: "안전한 지점에서", when_now: "바로", when_after_turn: "이 턴 끝나고",
  attach: "파일 붙이기", attachments: "붙인 파일", att_image: "{type} 이미지", att_file: "{type} 파일",
  att_bad_type: "{name}은(는) 붙일 수 없어요: 이미지, PDF, 텍스트 파일만 돼요", att_too_many: "글 하나에 파일은 {n}개까지예요",
  att_remove: "{name} 빼기",
  change_mode: "모드 바꾸기", change_model: "모델 바꾸기", model_label: "모델 (예: sonnet, opus, claude-sonnet-4-5)",
  mode_set: "모드: {mode}", model_set: "모델: {model}", reopened_in: "맥에서 세션을 {mode} 모드로 다시 여는 중…",
  held_title: "붙잡은 글", held_hint: "턴이 안전한 지점에 오면 넣어요.",
  hs_held: "붙잡음", hs_typing: "넣는 중…", hs_typed: "넣음", hs_cancelled: "취소됨", hs_failed: "실패",
  hs_sending: "보내는 중…",
  read_only_note: "읽기 전용 보기예요. 여기서는 보낼 수 없어요.",
  leave_read_only: "보통으로 열기", open_read_only: "읽기 전용으로 열기",
  reopened: "맥에서 세션을 다시 여는 중…",
  actions: "세션 조작", rename: "이름 바꾸기", group: "그룹", lock: "잠그기", unlock: "잠금 풀기",
  move_up: "위로", move_down: "아래로", rest: "쉬게 하기", end: "끝내기", reopen: "다시 열기",
  locked: "잠김", cancel: "취소", save: "저장", close: "닫기",
  rename_label: "새 제목", group_label: "그룹 이름 (비우면 그룹 없음)",
  confirm_end: "이 세션을 끝낼까요? Claude Code는 멈추고, 세션은 목록에 남아 다시 열 수 있어요.",
  confirm_rest: "이 세션을 쉬게 할까요? 터미널을 멈추고, 글을 보내면 다시 열어요.",
  fork: "갈래 만들기", forked: "갈래를 만들었어요: 같은 기록의 새 세션", fork_of: "{title}의 갈래",
  delete: "삭제", deleted_ok: "세션을 삭제했어요",
  confirm_delete: "이 세션을 삭제할까요? Claude Code는 멈추고, 이벤트는 여기와 맥에서 지워져요. 맥에 있는 Claude Code 자체 기록은 남아요.",
  ns_worktree: "새 git 워크트리에서", ns_branch: "브랜치 (비우면 자동 이름)",
  card_pending: "답을 보내는 중…", card_waiting: "답했어요 — 맥이 확인하기를 기다리는 중…",
  card_closed: "이 카드는 맥에서 이미 닫혔어요.",
  card_changed: "확인 창이 바뀌어 누르지 않았어요.",
  card_not_ready: "확인 창이 아직 없어요.",
  card_from_screen: "화면에서 읽음: 잘렸을 수 있어요.",
  card_always: "이 세션에서는 이 종류의 도구를 항상 허용",
  ck_denied: "자동 모드가 막음",
  card_denied_note: "Claude Code가 이 답을 잠시 기다려요. 그 뒤에는 거부가 그대로예요.",
  gr_title: "이번 claude 실행 동안 허용", gr_none: "없음: “항상”으로 답한 카드가 없어요.",
  gr_note: "카드의 “항상”으로 준 허용이에요. claude를 다시 열거나 되살리거나 옮기면 끝나고, 위의 규칙은 남아요.",
  gr_cat: "{cat} 도구", gr_from: "{tool} 카드에서 · {ago}", gr_revoke: "취소", gr_revoke_label: "{what} 허용 취소",
  gr_revoked: "취소했어요: 이 도구들은 다시 물어요.", gr_offline: "맥이 꺼져 있어 지금은 허용 목록을 읽을 수 없어요.",
  card_submit: "제출", card_type: "직접 입력", card_send: "보내기",
  card_read_only: "답하려면 세션을 보통으로 여세요.",
  tool_failed: "실패", tool_done: "끝남", tool_line: "1줄", tool_lines: "{n}줄",
  ml_compacted: "📦 맥락을 압축했어요", ml_cleared: "🧹 /clear · 대화를 비웠어요",
  ml_interrupted: "사용자가 중단함", ml_interrupted_tool: "도구를 쓰는 중에 사용자가 중단함",
  ml_rejected: "사용자가 거절함", ml_revived: "🔁 맥이 다시 켜져서 같은 대화로 세션을 다시 열었어요",
  card_step: "질문 {n}/{of}", card_show_all: "모두 보기",
  card_send_held: "지금 보내는 글은 이 답을 기다려요.",
  card_send_dismiss: "지금 글을 보내면 이 카드는 닫히고 글이 Claude에게 가요.",
  plan_keep: "계속 계획하기", plan_feedback: "계획에서 바꿀 점 (선택)",
  new_messages: "새 메시지 ↓", sent_as_one: "메시지 {n}개를 하나로 보냈어요",
  tool: "도구", command: "명령", file: "파일",
  ns_title: "새 세션", ns_mac: "맥", ns_folder: "폴더", ns_mode: "권한 모드",
  ns_prompt: "첫 메시지 (선택)", ns_model: "모델 (선택)", ns_start: "시작",
  ns_offline: "(끊김)", ns_no_mac: "연결된 맥이 없어요.",
  pm_default: "도구마다 묻기 (기본)", pm_acceptEdits: "파일 수정 허용", pm_plan: "플랜 먼저",
  pm_auto: "자동 (확인 창 없음)", pm_manual: "수동", pm_bypassPermissions: "권한 건너뛰기",
  pm_dontAsk: "묻지 않기",
  language: "언어", notifications: "알림", notif_on: "세션이 응답을 기다리면 알림",
  notif_turn_end: "턴이 끝날 때도 알림", notif_test: "테스트 알림 보내기",
  notif_unsupported: "이 브라우저에서는 알림을 받을 수 없어요 (HTTPS에서 홈 화면에 설치하세요).",
  notif_denied: "브라우저 설정에서 이 페이지의 알림이 막혀 있어요.",
  notif_enabled: "알림이 켜져 있어요.", notif_disabled: "알림이 꺼져 있어요.",
  phones: "연결된 폰", this_phone: "이 폰", revoke: "연결 끊기", revoked: "끊김",
  paired: "{ago} 연결", seen: "{ago} 접속", last_used: "마지막 사용 {ago}", logout: "로그아웃", confirm_logout: "이 폰에서 로그아웃할까요?",
  confirm_revoke: "{name}의 연결을 끊을까요? 다시 연결하려면 새 코드가 필요해요.",
  agent_version: "에이전트 {v}", claude_version: "Claude Code {v}",
  cv_newer: "Claude Code {v}은(는) 이 브리지가 테스트한 버전보다 새로워요: 카드를 놓칠 수 있어요",
  cv_older: "Claude Code {v}은(는) 이 브리지가 테스트한 버전보다 오래됐어요: 카드를 잘못 읽을 수 있어요",
  cv_untested: "Claude Code {v}은(는) 이 브리지가 테스트한 버전이 아니에요: 카드를 잘못 읽을 수 있어요",
  cv_unknown: "이 맥의 Claude Code 버전을 읽을 수 없어요: 카드를 놓칠 수 있어요",
  pair_title: "이 폰 연결하기", pair_intro: "“claude-bridge pair”가 보여 준 코드를 넣거나 링크를 여세요.",
  pair_code: "연결 코드", pair_name: "이 폰의 이름", pair_button: "연결", pairing: "연결하는 중…",
  paired_ok: "연결됐어요. 조작 페이지를 여는 중…",
  not_paired: "이 브라우저는 연결되지 않았어요. 릴레이가 도는 컴퓨터에서 “claude-bridge pair”를 실행하고 링크를 여세요.",
  enter_code: "코드 입력",
  err_unreachable: "릴레이에 연결할 수 없어요. 연결을 확인하고 다시 해 보세요.",
  search: "세션 찾기", search_ph: "제목, 요약, 파일, 도구…", filters: "조건", f_state: "상태",
  f_group: "그룹", f_stage: "단계", f_mac: "이 맥", f_folder: "이 폴더", any: "전부", stage_active: "활성",
  archived: "보관됨", pinned: "고정됨", deleted: "삭제됨", here: "이 맥 / 이 폴더", elsewhere: "다른 곳",
  no_results: "찾은 세션이 없어요.", more_results: "더 있어요. 조건을 좁혀 보세요.", clear_search: "지우기",
  tok: "토큰", cost: "사용량과 비용", src_cost_state: "Claude Code의 비용 기록", src_estimate: "가격표로 추정",
  tk_input: "입력", tk_output: "출력", tk_cache_read: "캐시 읽기", tk_cache_write: "캐시 쓰기", tk_total: "토큰 합계",
  by_model: "모델별", by_agent: "하위 에이전트별", no_price: "가격 모름: {m}",
  reset_title: "자동 제목으로", pin: "고정 (남기기)", unpin: "고정 풀기", pinned_ok: "고정했어요.",
  unpinned_ok: "고정을 풀었어요.",
  archived_note: "보관된 세션이라 읽기 전용이에요. 고정하면 남기고 다시 활성으로 돌려요.",
  perms: "권한", pol_all: "모든 도구 허용 (확인 창 없음)",
  pol_all_for: "기간", pol_all_1h: "1시간", pol_all_session: "세션 끝까지", pol_all_until: "{time}까지",
  pol_cats: "종류별", pol_tools: "도구별",
  pol_default: "기본", r_allow: "허용", r_ask: "묻기", r_deny: "거부", cat_read: "읽기", cat_edit: "수정",
  cat_execute: "실행", cat_web: "웹", cat_mcp: "MCP", pol_tool: "도구 이름", pol_add: "추가", pol_remove: "{tool} 지우기",
  pol_note: "도구 규칙이 종류 규칙보다, 정한 규칙이 “모든 도구 허용”보다 앞서요. 질문과 플랜은 늘 물어요.",
  pol_saved: "맥에 저장했어요.", pol_offline: "맥이 끊겨 있어요. 권한은 맥이 돌아와야 바꿀 수 있어요.",
  pol_unknown: "맥이 아직 알려 주지 않아 기본값이에요.", pol_read_only: "바꾸려면 세션을 보통으로 여세요.",
  sa_running: "도는 중", sa_finished: "끝남", sa_failed: "실패", sa_open: "하위 에이전트 열기", sa_task: "할 일",
  sa_none: "기록이 아직 없어요.", retention: "보관", ret_ages: "{a}일 쉬면 보관, 그 {d}일 뒤 삭제 (0: 안 함).",
  ret_last: "마지막 실행 {ago}, {how}", ret_none: "아직 실행 전이에요.", ret_sum: "보관 {a}, 활성 {r}, 삭제 {d}",
  ret_counts: "활성 {a} · 보관 {b} · 고정 {p}", ret_run: "지금 실행", ret_waiting: "끊긴 맥에서 지울 것 {n}개",
  trig_request: "요청으로", trig_schedule: "일정대로", ret_next: "다음 실행 {at}",
  audit: "감사 기록", aud_note: "이 세션의 카드에 내린 모든 결정, 최근 것부터: 누가 답했는지, 어느 규칙이 정했는지.",
  aud_none: "아직 결정이 없어요.", aud_older: "이전 기록", aud_allow: "허용함", aud_deny: "거부함", aud_always: "항상",
  aud_by_phone: "{name} · 토큰 {token} · {addr} 에서", aud_by_rule: "{source}: {rule}",
  aud_src_policy: "세션 규칙", aud_src_allow_all: "모두 허용", aud_src_hook: "훅"
};

// The files and changes view, the new-session pickers and the wide layout.
Object.assign(en, {
  fv_title: "Files and changes", fv_files: "Files", fv_changes: "Changes", fv_top: "Folder", fv_path: "Path",
  fv_empty: "This folder is empty.", fv_more: "Showing {n} of {total}.", fv_cut: "Cut: only the start is shown.",
  fv_binary: "Binary file: not shown.", fv_outside: "leads outside the folder", fv_other: "not a file",
  fv_bad_name: "Its name is not UTF-8: it cannot be opened from here.",
  fv_not_repo: "The session's folder is not in a git repository.",
  fv_offline: "The Mac is offline: its files can be read once it is back.",
  fv_branch: "Branch {name}", fv_n_changed: "{n} changed", fv_clean: "No changes.",
  fv_staged: "staged", fv_untracked: "untracked", fv_modified: "modified", fv_added: "added",
  fv_deleted: "deleted", fv_renamed: "renamed", fv_copied: "copied", fv_conflict: "conflict",
  fv_staged_diff: "Staged", fv_unstaged_diff: "Not staged", fv_no_diff: "No difference to show.",
  fv_view: "Diff view", fv_unified: "Unified", fv_split: "Split",
  ns_recent: "Recent folders on this Mac", ns_model_default: "The Mac's default", ns_model_other: "Other…",
  wd_sessions: "Sessions",
});
Object.assign(ko, {
  fv_title: "파일과 변경 사항", fv_files: "파일", fv_changes: "변경 사항", fv_top: "폴더", fv_path: "경로",
  fv_empty: "빈 폴더예요.", fv_more: "{total}개 중 {n}개를 보여 줘요.", fv_cut: "앞부분만 보여 줘요.",
  fv_binary: "바이너리 파일이라 보여 주지 않아요.", fv_outside: "폴더 밖을 가리켜요", fv_other: "파일이 아니에요",
  fv_bad_name: "이름이 UTF-8이 아니라 여기서 열 수 없어요.",
  fv_not_repo: "세션 폴더가 git 저장소 안에 있지 않아요.",
  fv_offline: "맥이 끊겨 있어요. 다시 연결되면 파일을 볼 수 있어요.",
  fv_branch: "브랜치 {name}", fv_n_changed: "{n}개 바뀜", fv_clean: "바뀐 것이 없어요.",
  fv_staged: "스테이징됨", fv_untracked: "추적 안 됨", fv_modified: "수정", fv_added: "추가",
  fv_deleted: "삭제", fv_renamed: "이름 바뀜", fv_copied: "복사", fv_conflict: "충돌",
  fv_staged_diff: "스테이징됨", fv_unstaged_diff: "스테이징 안 됨", fv_no_diff: "보여 줄 차이가 없어요.",
  fv_view: "diff 보기", fv_unified: "한 줄로", fv_split: "나란히",
  ns_recent: "이 맥에서 최근 쓴 폴더", ns_model_default: "맥의 기본값", ns_model_other: "직접 입력…",
  wd_sessions: "세션",
});

export const LANGS = { en: "English", ko: "한국어" };
const TABLES = { en, ko };
const KEY = "cb-lang";

function initial() {
  try {
    const saved = localStorage.getItem(KEY);
    if (saved && TABLES[saved]) return saved;
  } catch (_) { /* storage blocked */ }
  const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || "en"];
  return langs.some((l) => String(l).toLowerCase().startsWith("ko")) && !String(langs[0]).toLowerCase().startsWith("en") ? "ko" : "en";
}

let lang = initial();
document.documentElement.lang = lang;

export function getLang() { return lang; }

export function setLang(next) {
  if (!TABLES[next]) return;
  lang = next;
  document.documentElement.lang = next;
  try { localStorage.setItem(KEY, next); } catch (_) { /* storage blocked */ }
}

/** The label for ``key`` in the page's language, with {name} placeholders filled. */
export function t(key, vars) {
  let text = TABLES[lang][key];
  if (text === undefined) text = en[key];
  if (text === undefined) return key;
  if (vars) text = text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  return text;
}

export function stateLabel(session) {
  if (!session) return "";
  if (session.state === "busy" && session.activity === "coding") return t("st_coding");
  if (session.state === "waiting" && session.card) return t("ck_" + session.card.kind);
  return t("st_" + session.state);
}
