// Every drawing path of puffgpu's p5 subset, moving with frameCount and random(): the browser
// test plays it in headless Chromium and checks that the C env draws the same last frame.
let score = 0, t = 0, g = null, pal;

function setup() {
  createCanvas(400, 300);
  g = createGraphics(120, 80);
}

function resetGame(seed) {
  score = 0;
  t = 0;
  pal = [color(255, 0, 0), color('#30c0f0'), color('rgba(20, 200, 90, 0.5)'), color(200)];
}

function keyPressed() { score += 1; }

function draw() {
  t += 1;
  background(20, 24, 40);
  // strokes of several weights, on and off shapes
  stroke(255, 255, 0);
  strokeWeight(3);
  fill(pal[0]);
  rect(10 + t % 50, 10, 60, 40);
  noFill();
  strokeWeight(1);
  ellipse(200, 60, 70 + (t % 20), 40);
  noStroke();
  // modes
  rectMode(CENTER);
  fill(lerpColor(pal[0], pal[1], (t % 30) / 30));
  rect(300, 60, 50, 30);
  rectMode(CORNERS);
  fill(0, 255, 0, 128);
  rect(320, 100, 380, 150);
  rectMode(CORNER);
  ellipseMode(CORNER);
  fill(pal[2]);
  ellipse(10, 100, 60, 40);
  ellipseMode(CENTER);
  // arcs, pies, rings
  fill(255, 128, 0);
  arc(120, 150, 80, 80, 0.3, PI + 0.3 + t * 0.05, PIE);
  stroke(255);
  strokeWeight(4);
  noFill();
  arc(220, 150, 60, 90, -HALF_PI, PI * 1.7);
  noStroke();
  // transforms
  push();
  translate(200, 230);
  rotate(t * 0.07);
  scale(1.5, 0.8);
  fill(180, 80, 255);
  triangle(-20, 10, 20, 10, 0, -25);
  quad(-40, -5, -30, -15, -25, 0, -35, 8);
  pop();
  push();
  angleMode(DEGREES);
  translate(330, 230);
  rotate(t * 3);
  fill(pal[3]);
  rect(-15, -15, 30, 30);
  angleMode(RADIANS);
  pop();
  // shapes
  colorMode(HSB, 360, 100, 100);
  fill((t * 7) % 360, 80, 90);
  beginShape();
  vertex(40, 200); vertex(90, 180); vertex(70, 230); vertex(100, 260); vertex(30, 250); vertex(60, 220);
  endShape(CLOSE);
  colorMode(RGB);
  stroke(0, 255, 255);
  strokeWeight(2);
  beginShape(LINES);
  vertex(110, 200); vertex(150, 260); vertex(150, 200); vertex(110, 260);
  endShape();
  beginShape(TRIANGLE_STRIP);
  fill(90, 90, 200);
  vertex(250, 270); vertex(260, 240); vertex(280, 275); vertex(290, 245); vertex(310, 280);
  endShape();
  strokeWeight(6);
  point(370, 20 + (t % 40));
  strokeWeight(1);
  line(0, 299 - t % 50, 399, 250);
  noStroke();
  // an offscreen buffer drawn twice, once scaled
  g.clear();
  g.background(0, 0, 0, 60);
  g.fill(255, 255, 255);
  g.circle(30 + (t % 60), 40, 30);
  g.fill(255, 0, 0, 150);
  g.rect(60, 20, 40, 40);
  image(g, 260, 160);
  image(g, 0, 270, 60, 30);
  // random and the deterministic math
  fill(random(255), random(255), random(255));
  circle(200 + 80 * Math.sin(t * 0.1), 120 + 30 * Math.cos(t * 0.13), 12);
  const a = Math.atan2(Math.sin(t), Math.cos(t * 0.5));
  fill(255);
  rect(5, 290, 10 + 5 * a + Math.exp(Math.log(t + 1) * 0.5), 4);
  text('score ' + score, 10, 10);
}

function getGameState() {
  return { score: score, lives: 1, gameState: t >= 400 ? 'WIN' : 'PLAYING' };
}
