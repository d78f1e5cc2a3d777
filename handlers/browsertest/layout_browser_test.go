package browsertest_test

// overflowing lists what sticks out of the viewport: the page itself when
// it scrolls sideways, and every element whose box passes an edge of the
// viewport without a scrolling ancestor (a table's wrapper) to hold it; at
// 1280 px and more, also a table wider than its wrapper. Badges and the
// dates in tables must each stay on one line, and no part of a
// description's value is drawn over another.
const overflowing = `(() => {
	const vw = window.innerWidth, out = [];
	const name = el => el.tagName.toLowerCase() + (el.dataset.testid ? '[' + el.dataset.testid + ']' : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
	if (document.documentElement.scrollWidth > vw) {
		let widest = document.body, right = 0;
		for (const el of document.body.querySelectorAll('*')) {
			const r = el.getBoundingClientRect();
			if (r.right > right) { right = r.right; widest = el; }
		}
		out.push('the page is ' + document.documentElement.scrollWidth + 'px wide (widest: ' + name(widest) + ' to ' + Math.round(right) + ')');
	}
	const scrolls = el => {
		for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
			if (/(auto|scroll)/.test(getComputedStyle(p).overflowX)) return true;
		}
		return false;
	};
	for (const el of document.body.querySelectorAll('*')) {
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.height === 0 || scrolls(el)) continue;
		if (r.right > vw + 0.5 || r.left < -0.5) {
			out.push(name(el) + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right));
		}
	}
	// On a laptop's screen the tables fit: their wrappers need not scroll.
	if (vw >= 1280) {
		for (const el of document.querySelectorAll('.overflow-auto')) {
			if (el.scrollWidth > el.clientWidth) out.push(name(el.firstElementChild) + ' is ' + el.scrollWidth + 'px in ' + el.clientWidth + 'px');
		}
	}
	for (const el of document.querySelectorAll('.badge, .node-badge, .cluster-badge, .admin-badge, td time')) {
		const r = el.getBoundingClientRect(), fs = parseFloat(getComputedStyle(el).fontSize);
		if (r.height > 2.2 * fs) out.push(name(el) + ' wraps: ' + Math.round(r.height) + 'px high');
	}
	// Nothing in a description list is drawn over anything else in it (a
	// hint over its value).
	const box = n => {
		if (n.nodeType === Node.TEXT_NODE) {
			if (!n.textContent.trim()) return null;
			const r = document.createRange();
			r.selectNodeContents(n);
			return r.getBoundingClientRect();
		}
		return n.nodeType === Node.ELEMENT_NODE && n.tagName !== 'BR' ? n.getBoundingClientRect() : null;
	};
	for (const dd of document.querySelectorAll('dl dd')) {
		const parts = [...dd.childNodes].map(n => [n, box(n)]).filter(([, r]) => r && r.width > 0 && r.height > 0);
		for (let i = 0; i < parts.length; i++) {
			for (let j = i + 1; j < parts.length; j++) {
				const a = parts[i][1], b = parts[j][1];
				const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
				if (w > 1 && h > 1) out.push((parts[j][0].nodeType === Node.ELEMENT_NODE ? name(parts[j][0]) : 'text') + ' is drawn over ' + (parts[i][0].nodeType === Node.ELEMENT_NODE ? name(parts[i][0]) : 'text') + ' by ' + Math.round(h) + 'px');
			}
		}
	}
	return out.slice(0, 20);
})()`
