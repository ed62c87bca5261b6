/// The emoji short codes (GitHub's gemoji names, as ntfy's `emojis.md` lists them) that a tag turns into. Herald keeps
/// the ones senders use in alerts, status and home messages (ntfy's own excerpt first); a tag not in this table stays a
/// tag (docs/senders.md).
enum NtfyEmoji {
    static func emoji(for tag: String) -> String? { table[tag.lowercased()] }

    static let table: [String: String] = [
        // ntfy's excerpt (docs/publish.md, "Tags & emojis").
        "+1": "👍", "thumbsup": "👍", "-1": "👎", "thumbsdown": "👎", "partying_face": "🥳", "tada": "🎉",
        "heavy_check_mark": "✔️", "loudspeaker": "📢", "warning": "⚠️", "rotating_light": "🚨",
        "triangular_flag_on_post": "🚩", "skull": "💀", "facepalm": "🤦", "no_entry": "⛔", "no_entry_sign": "🚫",
        "cd": "💿", "computer": "💻",
        // Status.
        "white_check_mark": "✅", "x": "❌", "heavy_multiplication_x": "✖️", "negative_squared_cross_mark": "❎",
        "exclamation": "❗", "heavy_exclamation_mark": "❗", "grey_exclamation": "❕", "question": "❓", "bangbang": "‼️",
        "information_source": "ℹ️", "red_circle": "🔴", "green_circle": "🟢", "yellow_circle": "🟡", "orange_circle": "🟠",
        "blue_circle": "🔵", "white_circle": "⚪", "black_circle": "⚫", "large_blue_circle": "🔵", "stop_sign": "🛑",
        "fire": "🔥", "boom": "💥", "zap": "⚡", "sos": "🆘", "ok": "🆗", "new": "🆕", "up": "🆙", "cool": "🆒",
        "arrow_up": "⬆️", "arrow_down": "⬇️", "arrow_right": "➡️", "arrow_left": "⬅️", "chart_with_upwards_trend": "📈",
        "chart_with_downwards_trend": "📉", "bar_chart": "📊", "hourglass": "⌛", "hourglass_flowing_sand": "⏳",
        "stopwatch": "⏱️", "alarm_clock": "⏰", "timer_clock": "⏲️", "watch": "⌚", "calendar": "📆", "date": "📅",
        "bell": "🔔", "no_bell": "🔕", "mega": "📣", "speech_balloon": "💬", "memo": "📝", "pencil": "📝",
        "pushpin": "📌", "paperclip": "📎", "link": "🔗", "lock": "🔒", "unlock": "🔓", "key": "🔑", "shield": "🛡️",
        "mag": "🔍", "bulb": "💡", "gear": "⚙️", "wrench": "🔧", "hammer": "🔨", "hammer_and_wrench": "🛠️",
        "toolbox": "🧰", "package": "📦", "inbox_tray": "📥", "outbox_tray": "📤", "email": "📧", "envelope": "✉️",
        "e-mail": "📧", "mailbox": "📫", "floppy_disk": "💾", "dvd": "📀", "desktop_computer": "🖥️", "keyboard": "⌨️",
        "printer": "🖨️", "iphone": "📱", "phone": "☎️", "telephone_receiver": "📞", "battery": "🔋", "electric_plug": "🔌",
        "satellite": "📡", "globe_with_meridians": "🌐", "cloud": "☁️", "robot": "🤖", "bug": "🐛", "rocket": "🚀",
        "construction": "🚧", "recycle": "♻️", "wastebasket": "🗑️", "file_folder": "📁", "open_file_folder": "📂",
        "clipboard": "📋", "books": "📚", "moneybag": "💰", "money_with_wings": "💸", "credit_card": "💳",
        "shopping_cart": "🛒", "gift": "🎁", "trophy": "🏆", "medal_sports": "🏅", "star": "⭐", "star2": "🌟",
        "sparkles": "✨", "heart": "❤️", "broken_heart": "💔", "eyes": "👀", "wave": "👋", "clap": "👏", "pray": "🙏",
        "muscle": "💪", "ok_hand": "👌", "point_right": "👉", "raised_hand": "✋", "smile": "😄", "smiley": "😃",
        "grinning": "😀", "joy": "😂", "wink": "😉", "sunglasses": "😎", "thinking": "🤔", "confused": "😕",
        "cry": "😢", "sob": "😭", "scream": "😱", "rage": "😡", "angry": "😠", "sleeping": "😴", "mask": "😷",
        "ghost": "👻", "alien": "👽", "poop": "💩", "hankey": "💩", "skull_and_crossbones": "☠️", "zzz": "💤",
        // Home and the weather.
        "house": "🏠", "house_with_garden": "🏡", "door": "🚪", "bed": "🛏️", "couch_and_lamp": "🛋️", "bathtub": "🛁",
        "toilet": "🚽", "camera": "📷", "video_camera": "📹", "movie_camera": "🎥", "tv": "📺", "radio": "📻",
        "musical_note": "🎵", "headphones": "🎧", "car": "🚗", "red_car": "🚗", "bus": "🚌", "bike": "🚲",
        "airplane": "✈️", "truck": "🚚", "ambulance": "🚑", "fire_engine": "🚒", "police_car": "🚓", "dog": "🐶",
        "cat": "🐱", "horse": "🐴", "unicorn": "🦄", "bird": "🐦", "mouse": "🐭", "droplet": "💧", "ocean": "🌊",
        "sunny": "☀️", "cloud_with_rain": "🌧️", "umbrella": "☔", "snowflake": "❄️", "snowman": "⛄",
        "thermometer": "🌡️", "tornado": "🌪️", "rainbow": "🌈", "partly_sunny": "⛅", "crescent_moon": "🌙",
        "seedling": "🌱", "evergreen_tree": "🌲", "deciduous_tree": "🌳", "cactus": "🌵", "sunflower": "🌻",
        "coffee": "☕", "beer": "🍺", "pizza": "🍕", "cake": "🍰", "birthday": "🎂", "christmas_tree": "🎄",
        "jack_o_lantern": "🎃", "balloon": "🎈", "confetti_ball": "🎊", "soccer": "⚽", "basketball": "🏀",
        "baby": "👶", "man": "👨", "woman": "👩", "family": "👪", "busts_in_silhouette": "👥", "bust_in_silhouette": "👤",
        "world_map": "🗺️", "earth_americas": "🌎", "earth_africa": "🌍", "earth_asia": "🌏", "flag_white": "🏳️",
        "checkered_flag": "🏁", "crossed_flags": "🎌", "dart": "🎯", "game_die": "🎲", "video_game": "🎮",
        "lipstick": "💄", "ring": "💍", "gem": "💎", "hospital": "🏥", "pill": "💊", "syringe": "💉", "dna": "🧬",
        "microscope": "🔬", "telescope": "🔭", "100": "💯", "1234": "🔢", "abc": "🔤", "heavy_plus_sign": "➕",
        "heavy_minus_sign": "➖", "repeat": "🔁", "arrows_counterclockwise": "🔄", "twisted_rightwards_arrows": "🔀",
        "arrow_forward": "▶️", "pause_button": "⏸️", "stop_button": "⏹️", "record_button": "⏺️", "fast_forward": "⏩",
    ]
}
